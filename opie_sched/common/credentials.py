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
"""The companion services' own OpenStack identity (``[service_credentials]``).

opie-market, opie-autoscaler and opie-repacker talk to Nova, Placement,
Keystone and the market API as one service user. As other OpenStack
services do, that identity is configured with keystoneauth's conf
loading: ``[service_credentials]`` holds the auth plugin and its options
(``auth_type``, ``auth_url``, ``username`` ...), the session options
(``cafile``, ``insecure``, ``timeout`` ...) and the catalog options that
apply to every service reached (``valid_interfaces``, ``region_name``,
retries). :func:`connect` builds the openstacksdk Connection of all three
services from it.

One group, not one per service: the three services act as the same
service user for the same catalog (the DevStack plugin writes them into
one configuration file), and each of them reaches several services
(compute, placement, identity, spot-market) through the catalog, so the
per-target-service adapter options (``service_type``,
``endpoint_override``, versions) of a Nova-style ``[placement]`` section
would not say which service they meant; the name is the one Ceilometer
and Aodh give the same thing.

When ``auth_type`` is unset, :func:`connect` falls back to openstacksdk's
own configuration: the clouds.yaml entry of the service's ``cloud``
option, or the ``OS_*`` environment variables.
"""

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP = 'service_credentials'

group = cfg.OptGroup(
    GROUP, title='Service credentials',
    help='The OpenStack identity of opie-market, opie-autoscaler and '
         'opie-repacker (keystoneauth1 options), used for Nova, Placement '
         'and the market API found in the Keystone catalog. auth_type '
         'names the keystoneauth plugin; possible values include '
         'password (user name and password, with project_name/'
         'project_domain_name or system_scope), v3applicationcredential '
         '(application_credential_id and _secret) and token; each '
         'plugin adds its own options here. When auth_type is unset the '
         'services use their "cloud" option (a clouds.yaml entry) or the '
         'OS_* environment variables instead, and every other option of '
         'this group is ignored.')

#: The adapter options that make sense for several target services at
#: once (keystoneauth's per-service ones -- service_type, service_name,
#: endpoint_override, version, min_version, max_version -- do not).
ADAPTER_OPTS = ('valid_interfaces', 'region_name', 'connect_retries',
                'connect_retry_delay', 'status_code_retries',
                'status_code_retry_delay')


#: What keystoneauth's help of these options leaves unsaid.
_MORE_HELP = {
    'valid_interfaces': ' Possible values: public, internal, admin (the '
                        'catalog endpoints of Nova, Placement and the '
                        'market API, spot-market). Unset: public.',
    'region_name': ' Unset: the catalog\'s endpoints of any region '
                   '(Nova, Placement and the market API alike).',
}


def _adapter_opts():
    opts = []
    for opt in ks_loading.get_adapter_conf_options(include_deprecated=False):
        if opt.dest not in ADAPTER_OPTS:
            continue
        if opt.dest in _MORE_HELP:
            opt = copy.deepcopy(opt)
            opt.help += _MORE_HELP[opt.dest]
        opts.append(opt)
    return opts


def register_opts(conf):
    """Register ``[service_credentials]`` on ``conf`` (idempotent).

    A group object of its own per ``conf``: oslo.config keeps overrides
    in the group's option table, so a shared one would leak
    ``set_override`` between ConfigOpts objects.
    """
    if GROUP not in conf:
        conf.register_group(cfg.OptGroup(GROUP, title=group.title,
                                         help=group.help))
    ks_loading.register_auth_conf_options(conf, GROUP)
    ks_loading.register_session_conf_options(conf, GROUP)
    conf.register_opts(_adapter_opts(), group=GROUP)


def list_opts():
    """For oslo-config-generator: the group with the session, adapter,
    auth-type and ``password`` plugin options (the plugin an operator
    most likely sets; others add their own options when loaded).
    """
    opts = (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options('password')
            + _adapter_opts())
    unique = {}
    for opt in opts:
        unique.setdefault(opt.dest, opt)
    return [(group, sorted(unique.values(), key=lambda o: o.dest))]


def configured(conf):
    """True when ``[service_credentials] auth_type`` is set."""
    register_opts(conf)
    return bool(conf[GROUP].auth_type)


def session(conf):
    """The keystoneauth Session of ``[service_credentials]``.

    :raises ValueError: ``auth_type`` is unset.
    :raises keystoneauth1.exceptions.auth_plugins.NoMatchingPlugin: an
        unknown ``auth_type``.
    :raises keystoneauth1.exceptions.auth_plugins.MissingRequiredOptions:
        the plugin lacks an option it needs (e.g. ``auth_url``).
    """
    if not configured(conf):
        raise ValueError('[%s] auth_type is not set' % GROUP)
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    return ks_loading.load_session_from_conf_options(conf, GROUP,
                                                     auth=auth)


def connect(conf, cloud=None, app_name=None):
    """The openstacksdk Connection of a companion service.

    From ``[service_credentials]`` (:func:`session`, its catalog
    options as the connection's ``interface``, ``region_name`` and
    retries) when its ``auth_type`` is set; otherwise openstacksdk's
    own configuration: clouds.yaml entry ``cloud``, or the ``OS_*``
    environment variables when ``cloud`` is None.

    :param conf: ``cfg.ConfigOpts`` (the group is registered if needed).
    :param cloud: the service's ``cloud`` option (str or None).
    :param app_name: name added to the User-Agent (e.g. ``opie-market``).
    :returns: ``openstack.connection.Connection``.
    :raises: what :func:`session` raises; openstacksdk's
        ``openstack.exceptions.ConfigException`` for an unknown cloud.
    """
    import openstack
    if not configured(conf):
        return openstack.connect(cloud=cloud, app_name=app_name)
    g = conf[GROUP]
    settings = {}
    if g.valid_interfaces:
        settings['interface'] = g.valid_interfaces
    for name in ('connect_retries', 'connect_retry_delay',
                 'status_code_retries', 'status_code_retry_delay'):
        if g[name] is not None:
            settings[name] = g[name]
    from openstack import connection
    return connection.Connection(session=session(conf),
                                 region_name=g.region_name,
                                 app_name=app_name, **settings)
