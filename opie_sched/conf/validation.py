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
"""The opie options checked as a whole, before a service uses them.

oslo.config refuses an out-of-range number or a value outside an
option's ``choices`` only when the option is read, which for most opie
options is at the first request that needs them. :func:`problems` reads
every option of every ``opie_*`` group registered on a ``ConfigOpts``
(so oslo.config's own ``min``/``max``/``choices`` refuse them now, and
the options naming a plugin -- ``[opie_rpm] utilisation_source``,
``[opie_repacker] strategy``, ``[opie_preemption] action``, the market's
``charge_rule`` and ``out_of_credit_policy`` -- refuse a name that is no
installed entry point, through :class:`opie_sched.plugins.OptionType`,
with the loader's sentence) and adds
what oslo.config cannot see:

* an option of an ``opie_*`` section of the configuration files that no
  opie option is called (a misspelt option is otherwise ignored
  silently), and an ``opie_*`` section that no opie group is called;
* ``[opie_preemption] cost_modules``: every module installed (entry-point
  group ``opie_sched.preemption.costs``) and loadable, multipliers
  finite and >= 0;
* ``[opie_preemption] max_retry_interval`` >= ``retry_interval``, and
  ``default_bid`` a decimal number >= 0;
* ``[opie_reliability] topology_file``: a readable file;
  ``[opie_autoscaler] stability_interval`` > 0;
* ``[opie_market]``: the market's :class:`~opie_sched.services.market.
  settings.Settings` (bids, prices, policies).

:func:`validate` raises :class:`ConfigError` with all of them on one line;
opie-scheduler (``OpieSchedulerManager.__init__``), opie-reconciler,
opie-market, opie-autoscaler and opie-repacker call it at start and
refuse to start, and ``opie-status upgrade check`` reports them.
"""

import difflib
import glob
import importlib.metadata
import os

from oslo_config import cfg

#: Prefix of the option groups (and configuration file sections) of opie.
PREFIX = 'opie_'


class ConfigError(cfg.Error, ValueError):
    """A configuration the service cannot honour (an oslo.config error:
    the services' ``except cfg.Error`` report it as a bad configuration).

    :ivar problems: list of str, one sentence per problem.
    """

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__('invalid opie configuration: %s'
                         % '; '.join(self.problems))


def _one_line(text):
    return ' '.join(str(text).split())


def known_options():
    """``{section: {option names}}`` of every opie group of both
    oslo-config-generator namespaces, deprecated names included.
    """
    from opie_sched import conf as opie_conf
    lists = list(opie_conf.list_opts())
    # the market's options, by the oslo.config.opts entry point its
    # sample generator uses (the market sits in a layer above this module)
    for ep in importlib.metadata.entry_points(group='oslo.config.opts',
                                              name='opie_sched.market'):
        try:
            lists += ep.load()()
        except ImportError:  # an install without the market's oslo.db
            lists.append(('opie_market', []))
    known = {}
    for group, opts in lists:
        name = getattr(group, 'name', group)
        known.setdefault(name, set())
        for opt in opts:
            known[name].add(opt.dest)
            known[name].add(opt.name)
            for dep in opt.deprecated_opts or ():
                known.setdefault(dep.group or name, set()).add(
                    (dep.name or opt.name).replace('-', '_'))
    return known


def config_files(conf):
    """The configuration files ``conf`` was parsed from
    (``--config-file`` and the ``*.conf`` of ``--config-dir``).
    """
    files = []
    for opt, what in (('config_file', None), ('config_dir', 'dir')):
        try:
            value = conf[opt]
        except cfg.NoSuchOptError:
            continue
        if not value:
            continue
        for item in ([value] if isinstance(value, str) else value):
            if what == 'dir':
                files.extend(sorted(glob.glob(os.path.join(item, '*.conf'))))
            else:
                files.append(item)
    return files


def unknown_options(conf):
    """One sentence per ``opie_*`` section or option of the configuration
    files that no opie option has (with the nearest known name).
    """
    known = known_options()
    out = []
    for path in config_files(conf):
        sections = {}
        try:
            cfg.ConfigParser(path, sections).parse()
        except (OSError, cfg.ParseError):
            continue  # oslo.config itself reports unreadable files
        for section, values in sections.items():
            if not section.startswith(PREFIX):
                continue
            if section not in known:
                near = difflib.get_close_matches(section, known, 1)
                out.append('unknown section [%s] in %s%s' % (
                    section, path,
                    ' (did you mean [%s]?)' % near[0] if near else ''))
                continue
            for name in values:
                if name.replace('-', '_') in known[section]:
                    continue
                near = difflib.get_close_matches(
                    name, sorted(known[section]), 1)
                out.append('unknown option [%s] %s in %s%s' % (
                    section, name, path,
                    ' (did you mean %s?)' % near[0] if near else ''))
    return out


def _values(conf, group):
    """Read every option of ``group``; one sentence per refused value."""
    out = []
    for name in conf[group]:
        try:
            conf[group][name]
        except (cfg.ConfigFileValueError, ValueError) as exc:
            reason = _one_line(exc).rsplit(' is not valid: ', 1)[-1]
            out.append('[%s] %s: %s' % (group, name, reason))
    return out


def _preemption(conf, opts):
    from opie_sched.market import bids
    from opie_sched.preemption import costs
    out = []
    try:
        # the loader names an unknown module before importing any
        costs.load_policy(list(opts.cost_modules), conf=conf)
    except costs.CostModuleError as exc:
        out.append('[opie_preemption] cost_modules: %s' % _one_line(exc))
    if opts.max_retry_interval < opts.retry_interval:
        out.append('[opie_preemption] max_retry_interval (%d) must be >= '
                   'retry_interval (%d)' % (opts.max_retry_interval,
                                            opts.retry_interval))
    try:
        bids.parse_bid(opts.default_bid, what='default_bid')
    except bids.BidError as exc:
        out.append('[opie_preemption] %s' % _one_line(exc))
    return out


def _reliability(conf, opts):
    path = opts.topology_file
    if path and not os.access(path, os.R_OK):
        return ['[opie_reliability] topology_file: %s is not a readable '
                'file' % path]
    return []


def _autoscaler(conf, opts):
    if opts.stability_interval <= 0:
        return ['[opie_autoscaler] stability_interval must be > 0 (hours), '
                'got %g' % opts.stability_interval]
    return []


def _repacker(conf, opts):
    from opie_sched.conf import repacker as repacker_opts
    from opie_sched.rpm import planner
    out = []
    try:
        repacker_opts.policy(conf)
    except planner.PlanError as exc:
        out.append('[opie_repacker] %s' % _one_line(exc))
    return out


#: The checks beyond oslo.config's, by group: ``(conf, group attr) ->
#: [sentence]``; run only when every option of the group was readable.
GROUP_CHECKS = {
    'opie_preemption': _preemption,
    'opie_reliability': _reliability,
    'opie_autoscaler': _autoscaler,
    'opie_repacker': _repacker,
}

#: Entry point group of the companion services' checks of their own
#: option group (``group name = module:function(conf, group attr) ->
#: [sentence]``): the services sit in a layer above this module, so their
#: checks are found by name, never imported here.
CHECKS_NAMESPACE = 'opie_sched.config_checks'


def _group_check(group):
    check = GROUP_CHECKS.get(group)
    if check is not None:
        return check
    for ep in importlib.metadata.entry_points(group=CHECKS_NAMESPACE,
                                              name=group):
        try:
            return ep.load()
        except ImportError:  # the service's extra is not installed
            return None
    return None


def problems(conf):
    """Every problem of the opie options of ``conf`` (a parsed
    ``cfg.ConfigOpts``), one sentence each; empty when all is well.

    Only the groups registered on ``conf`` are read (a scheduler does not
    register ``[opie_market]``), but an unknown option is reported in any
    ``opie_*`` section.
    """
    out = unknown_options(conf)
    for group in [k for k in conf.keys() if k.startswith(PREFIX)]:
        if not isinstance(conf[group], cfg.ConfigOpts.GroupAttr):
            continue
        bad = _values(conf, group)
        out.extend(bad)
        check = _group_check(group)
        if check is not None and not bad:
            out.extend(check(conf, conf[group]))
    return out


def validate(conf):
    """Refuse a configuration with any :func:`problems`.

    :raises ConfigError: listing them (its message is one line).
    """
    found = problems(conf)
    if found:
        raise ConfigError(found)
