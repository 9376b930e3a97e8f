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
"""Old import paths of moved scheduler plugins, kept with a warning.

Operators name filter and weigher classes by their dotted path in
nova.conf (``available_filters``, ``weight_classes``). When a class moves,
its old module keeps the old name through a module-level ``__getattr__``
(PEP 562) made by :func:`module_getattr`: reading it returns the object
at its new place, issues a :class:`DeprecationWarning` and logs the
deprecation once per name (``oslo_log.versionutils``, so
``fatal_deprecations = True`` in nova.conf turns it into an error).
"""

import warnings

from oslo_log import log as logging
from oslo_log import versionutils

LOG = logging.getLogger(__name__)


class Moved(object):
    """One old name: the object it now is and where to find it.

    :param obj: the object the old name returns.
    :param new_path: the dotted path (or sentence) to use instead, for the
        message; default ``obj``'s own module and name.
    """

    def __init__(self, obj, new_path=None):
        self.obj = obj
        self.new_path = new_path or '%s.%s' % (obj.__module__,
                                               obj.__qualname__)


def module_getattr(old_module, names, rest=None):
    """A PEP 562 ``__getattr__`` for the module ``old_module``.

    :param old_module: the old module's dotted name (for the message).
    :param names: ``{old name: Moved or object}``.
    :param rest: a module whose other public names the old module also
        forwards (the non-plugin code that moved there), or None.
    :returns: function ``name -> object``; it raises
        :class:`AttributeError` for a name it does not know, as a module
        does.
    """
    table = {name: value if isinstance(value, Moved) else Moved(value)
             for name, value in names.items()}

    def __getattr__(name):
        moved = table.get(name)
        if moved is None:
            if (rest is None or name.startswith('_')
                    or not hasattr(rest, name)):
                raise AttributeError('module %r has no attribute %r'
                                     % (old_module, name))
            moved = Moved(getattr(rest, name),
                          '%s.%s' % (rest.__name__, name))
        message = ('%s.%s has moved: use %s (the old path will be '
                   'removed in a future release)'
                   % (old_module, name, moved.new_path))
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        versionutils.report_deprecated_feature(LOG, message)
        return moved.obj

    return __getattr__
