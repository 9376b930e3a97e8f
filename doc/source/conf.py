# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""Sphinx configuration of the opie_sched documentation (tox -e docs)."""

extensions = [
    # .. show-options:: (oslo.config.opts entry points of setup.cfg)
    'oslo_config.sphinxext',
    # .. show-policy:: (oslo.policy.policies entry points of setup.cfg)
    'oslo_policy.sphinxext',
]

project = 'opie_sched'
copyright = 'opie_sched developers'
author = 'opie_sched developers'

root_doc = 'index'
exclude_patterns = ['_build']
templates_path = []

# A stock theme shipped with Sphinx.
html_theme = 'alabaster'
html_theme_options = {
    'description': 'Preemptible instances, spot markets and smarter '
                   'placement for the OpenStack Nova scheduler',
    'fixed_sidebar': True,
}
html_static_path = []
html_title = 'opie_sched documentation'

# Every warning is an error in tox -e docs (-W); links to missing
# documents or labels count.
nitpicky = False
