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
"""Finding the plugin classes of a package, one rule per module.

The scheduler's filters (:mod:`opie_sched.scheduler.filters`) and weighers
(:mod:`opie_sched.scheduler.weights`) are found as nova finds its own
(``nova.scheduler.filters.all_filters``): every module of the package is
imported and its plugin classes are collected, so a new rule is one new
module and no list to edit.
"""

import importlib
import inspect
import pkgutil


def classes_in_package(package_name, package_path, base):
    """The concrete plugin classes defined in the modules of a package.

    A class counts when it is defined in one of the package's modules
    (not merely imported there), its name does not start with ``_``, it
    is a subclass of ``base`` and it is not abstract (a shared base class,
    e.g. :class:`opie_sched.scheduler.weights.base.BulkWeigher`, is left
    out). Modules whose name starts with ``_`` and sub-packages are not
    read.

    :param package_name: dotted name of the package (its ``__name__``).
    :param package_path: the package's ``__path__``.
    :param base: the plugin base class (nova's ``BaseHostFilter`` or
        ``BaseHostWeigher``).
    :returns: list of classes, by module name then class name (stable
        from one start to the next).
    :raises ImportError: a module of the package cannot be imported (a
        broken install; nova stops at start, as with its own plugins).
    """
    found = []
    for info in sorted(pkgutil.iter_modules(package_path),
                       key=lambda i: i.name):
        if info.ispkg or info.name.startswith('_'):
            continue
        module = importlib.import_module('%s.%s' % (package_name,
                                                    info.name))
        for name, obj in sorted(vars(module).items()):
            if (inspect.isclass(obj) and not name.startswith('_')
                    and obj.__module__ == module.__name__
                    and issubclass(obj, base)
                    and not inspect.isabstract(obj)):
                found.append(obj)
    return found
