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
"""The import graph of opie_sched has no circles and no upward imports.

The graph is read from the source with :mod:`ast`, without importing
anything: one node per module of ``opie_sched/`` (a package is its
``__init__``), one edge per ``import opie_sched...`` or ``from ...
import`` naming a module of the package, absolute or relative, wherever
it is written. Imports inside functions count like the others: a
deferred import hides a circle from the interpreter, not from a reader.
The block of ``if __name__ == '__main__':`` is left out (it runs only
when the module is a script, not when it is imported).
``from opie_sched.a import b`` is an edge to ``opie_sched.a.b`` when that
is a module, else to ``opie_sched.a``; the parent packages an import runs
implicitly are not edges. Entry points (stevedore, console scripts) load
by name and are not imports.

Layers (:data:`LAYERS`, lowest first; a module may import its own layer
and the layers below, never a layer above):

0. the pure algorithms, which import nothing from Nova nor openstacksdk
   (``tests/unit/test_layout.py`` checks that), the shared simulation
   core, and the one plugin loader (``plugins``, which every plugin
   family uses, the cost modules of ``preemption`` included);
1. what the plugin, the services and the tools share: ``common``, the
   options (``conf``) and the versioned notifications
   (``notifications``);
2. the Nova scheduler plugin, the companion services, the simulator;
3. the development and test clouds (``demo``, ``devcloud``);
4. the entry points (``cmd``, ``wsgi``).

Every top-level package must be given a layer: a new one fails
:meth:`test_every_package_has_a_layer` until it is placed.
"""

import ast
import collections
import os

import testtools

import opie_sched

ROOT = 'opie_sched'

LAYERS = (
    ('preemption', 'market', 'rpm', 'diehard', 'flavormix',
     'consolidation', 'workload', 'simcore', 'plugins'),
    ('common', 'conf', 'notifications'),
    ('scheduler', 'services', 'simulator'),
    ('demo', 'devcloud'),
    ('cmd', 'wsgi'),
)


def modules(package_dir=None):
    """``{module name: (path, is a package)}`` of every module under
    ``package_dir`` (default: the installed opie_sched's directory).
    """
    package_dir = package_dir or os.path.dirname(opie_sched.__file__)
    base = os.path.dirname(package_dir)
    out = {}
    for dirpath, dirnames, filenames in os.walk(package_dir):
        dirnames[:] = [d for d in dirnames if d != '__pycache__']
        for name in filenames:
            if not name.endswith('.py'):
                continue
            path = os.path.join(dirpath, name)
            parts = os.path.relpath(path, base)[:-3].split(os.sep)
            is_package = parts[-1] == '__init__'
            if is_package:
                parts = parts[:-1]
            out['.'.join(parts)] = (path, is_package)
    return out


def _is_main_block(node):
    test = getattr(node, 'test', None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == '__name__'
            and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == '__main__')


def _walk(tree):
    """:func:`ast.walk` without ``if __name__ == '__main__':`` blocks."""
    todo = collections.deque([tree])
    while todo:
        node = todo.popleft()
        if _is_main_block(node):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
        yield node


def import_graph(mods):
    """``{module: {(imported module, line)}}``: the intra-package imports
    of every module of ``mods`` (see the module docstring for the rules).
    """
    graph = {}
    for name, (path, is_package) in mods.items():
        with open(path, encoding='utf-8') as f:
            tree = ast.parse(f.read(), path)
        here = name.split('.') if is_package else name.split('.')[:-1]
        edges = set()
        for node in _walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split('.')[0] == ROOT:
                        edges.add((alias.name, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parent = here[:len(here) - node.level + 1]
                    target = '.'.join(
                        parent + ([node.module] if node.module else []))
                else:
                    target = node.module or ''
                if target.split('.')[0] != ROOT:
                    continue
                for alias in node.names:
                    sub = '%s.%s' % (target, alias.name)
                    edges.add((sub if sub in mods else target, node.lineno))
        graph[name] = edges
    return graph


def top_package(module):
    """``'scheduler'`` for ``opie_sched.scheduler.ownership``; ``''`` for the
    root package itself.
    """
    parts = module.split('.')
    return parts[1] if len(parts) > 1 else ''


def layer_of(module):
    """The layer index of a module, None when its package has none. The
    root package (``opie_sched/__init__.py``) is at the bottom.
    """
    package = top_package(module)
    if package == '':
        return 0
    for index, packages in enumerate(LAYERS):
        if package in packages:
            return index
    return None


def cycles(graph):
    """Strongly connected components of more than one node, or a node
    importing itself, each a sorted list (Tarjan, iterative).
    """
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph[node]:
                        found.append(sorted(component))
    return found


class ImportGraphTest(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.mods = modules()
        cls.graph = import_graph(cls.mods)
        cls.targets = {name: {t for t, _line in edges}
                       for name, edges in cls.graph.items()}

    def test_graph_is_read(self):
        # the reader sees absolute, relative and function-level imports
        # (a broken reader finding no edge would pass everything else)
        self.assertGreater(len(self.mods), 100)
        self.assertIn('opie_sched.preemption.victim_state',
                      self.targets['opie_sched.scheduler.actions'])
        self.assertIn('opie_sched.services.autoscaler.spot',
                      self.targets['opie_sched.services.autoscaler.app'])

    def test_every_import_names_a_module(self):
        missing = sorted('%s:%d imports %s' % (name, line, target)
                         for name, edges in self.graph.items()
                         for target, line in edges
                         if target not in self.mods)
        self.assertEqual([], missing)

    def test_every_package_has_a_layer(self):
        unplaced = sorted({top_package(m) for m in self.mods
                           if layer_of(m) is None})
        self.assertEqual([], unplaced, 'add them to LAYERS')

    def test_no_import_circles_between_modules(self):
        self.assertEqual([], cycles(self.targets))

    def test_no_import_circles_between_packages(self):
        packages = collections.defaultdict(set)
        for name, targets in self.targets.items():
            for target in targets:
                if top_package(target) != top_package(name):
                    packages[top_package(name)].add(top_package(target))
        graph = {p: packages.get(p, set())
                 for p in {top_package(m) for m in self.mods}}
        self.assertEqual([], cycles(graph))

    def test_no_upward_imports(self):
        upward = sorted(
            '%s:%d (layer %d) imports %s (layer %d)'
            % (name, line, layer_of(name), target, layer_of(target))
            for name, edges in self.graph.items()
            for target, line in edges
            if None not in (layer_of(name), layer_of(target))
            and layer_of(target) > layer_of(name))
        self.assertEqual([], upward)


class CheckerTest(testtools.TestCase):
    """The checks themselves find what they are for."""

    def test_cycles_found(self):
        graph = {'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'},
                 'e': {'e'}}
        self.assertEqual([['a', 'b', 'c'], ['e']], cycles(graph))
        self.assertEqual([], cycles({'a': {'b'}, 'b': set(),
                                     'c': {'a', 'b'}}))

    def test_layers(self):
        self.assertEqual(0, layer_of('opie_sched.consolidation.p2p'))
        self.assertEqual(0, layer_of('opie_sched'))
        self.assertEqual(1, layer_of('opie_sched.conf'))
        self.assertEqual(2, layer_of('opie_sched.simulator.engine'))
        self.assertEqual(4, layer_of('opie_sched.cmd.cli'))
        self.assertIsNone(layer_of('opie_sched.newpackage.x'))
