#!/bin/bash
#
# DevStack plugin of opie_sched: preemptible instances for Nova.
#
# Phases:
#   stack install      pip install opie_sched[scheduler] (develop mode; and
#                      market, repacker when enabled) next to nova
#   stack post-config  the scheduler options (opie-sched devcloud
#                      scheduler-conf), provider config location; write this
#                      compute host's provider config (opie-sched
#                      provider-config); with NOVA_USE_UNIFIED_LIMITS, the
#                      registered limits of class:CUSTOM_PREEMPTIBLE_*
#   stack extra        run opie-scheduler as n-sch (nova.conf + the scheduler
#                      options file); create preemptible twins
#                      of $OPIE_SCHED_TWIN_FLAVORS
#                      and the enabled companion services (opie-market,
#                      opie-market-api, opie-autoscaler, opie-repacker)
#   stack test-config  tempest.conf: [service_available] opie_market and
#                      the [opie] feature flags of what this plugin deployed
#                      (the Tempest plugin defaults them to False);
#                      [compute-feature-enabled] unified_limits with
#                      NOVA_USE_UNIFIED_LIMITS
#   unstack            stop opie-scheduler and the companion services
#   clean              remove the provider config file and the market API's
#                      uwsgi/Apache configuration
#
# Settings: devstack/settings.
#
# The steps and configuration are those of "opie-sched devcloud up"
# (opie_sched/devcloud): the same opie-sched subcommands (scheduler-conf,
# provider-config, flavor create-preemptible) and opie-market db sync. The
# market API follows DevStack's convention instead: uwsgi behind Apache
# with a path endpoint (write_uwsgi_config), public, internal and admin.

XTRACE_OPIE_SCHED=$(set +o | grep xtrace)
set -o xtrace

# Functions
# ---------

function install_opie_sched {
    # nova is in the scheduler extra (a client-only install has none);
    # DevStack's own nova, from git, satisfies it.
    local extras=scheduler
    if is_service_enabled opie-market opie-market-api; then
        extras+=,market
    fi
    if is_service_enabled opie-repacker; then
        extras+=,repacker
    fi
    setup_develop "$OPIE_SCHED_DIR" "$extras"
    if [[ "$OPIE_SCHED_COORDINATION_URL" == etcd3* ]]; then
        # tooz's etcd3gw driver
        pip_install_gr etcd3gw
    fi
    # The market API runs under DevStack's uwsgi (installed by stack.sh).
}

# _opie_nova_opt SECTION OPTION DEFAULT: an option of $NOVA_CONF, or DEFAULT
function _opie_nova_opt {
    local value
    value=$(iniget "$NOVA_CONF" "$1" "$2")
    echo "${value:-$3}"
}

# The scheduler options of opie_sched (filters, weighers), rendered by the
# same command devcloud uses: opie-sched devcloud scheduler-conf. The file
# is opie-scheduler's second --config-file (as in devcloud); when the plain
# n-sch runs instead, its options are copied into $NOVA_CONF.
function configure_opie_sched_filters {
    local filters
    filters=$(_opie_nova_opt filter_scheduler enabled_filters "$NOVA_FILTERS")
    sudo install -d -o "$STACK_USER" -m 0755 "$(dirname "$OPIE_SCHED_SCHEDULER_CONF")"
    local reliability=""
    if [[ "$OPIE_SCHED_RELIABILITY" == "True" ]]; then
        reliability="--reliability"
    fi
    "$OPIE_SCHED_BIN_DIR/opie-sched" devcloud scheduler-conf $reliability \
        --base-filters "$filters" --output "$OPIE_SCHED_SCHEDULER_CONF" \
        || die $LINENO "opie-sched devcloud scheduler-conf failed"
    if [[ "$OPIE_SCHED_ENABLE_SCHEDULER" != "True" ]]; then
        iniset_multiline "$NOVA_CONF" filter_scheduler available_filters \
            $(awk -F' = ' '$1 == "available_filters" { print $2 }' \
                "$OPIE_SCHED_SCHEDULER_CONF")
        local key
        for key in enabled_filters weight_classes; do
            iniset "$NOVA_CONF" filter_scheduler $key \
                "$(iniget "$OPIE_SCHED_SCHEDULER_CONF" filter_scheduler $key)"
        done
    fi
}

# The size of the file system holding PATH (or its closest existing parent),
# in GB, rounded down.
function _opie_disk_gb {
    local path=$1
    while [[ ! -d "$path" && "$path" != "/" ]]; do
        path=$(dirname "$path")
    done
    df -P -k "$path" | awk 'NR == 2 { print int($2 / 1048576) }'
}

function configure_opie_sched_provider_config {
    local vcpus=$OPIE_SCHED_HOST_VCPUS
    local memory_mb=$OPIE_SCHED_HOST_MEMORY_MB
    local disk_gb=$OPIE_SCHED_HOST_DISK_GB
    if [[ "$VIRT_DRIVER" == "fake" ]]; then
        # nova.virt.fake.FakeDriver
        vcpus=${vcpus:-1000}
        memory_mb=${memory_mb:-800000}
        disk_gb=${disk_gb:-600000}
    fi
    vcpus=${vcpus:-$(getconf _NPROCESSORS_ONLN)}
    memory_mb=${memory_mb:-$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)}
    disk_gb=${disk_gb:-$(_opie_disk_gb "${NOVA_INSTANCES_PATH:-$NOVA_STATE_PATH/instances}")}

    local cpu_ratio ram_ratio disk_ratio
    cpu_ratio=$(_opie_nova_opt DEFAULT cpu_allocation_ratio \
        "$(_opie_nova_opt DEFAULT initial_cpu_allocation_ratio 4.0)")
    ram_ratio=$(_opie_nova_opt DEFAULT ram_allocation_ratio \
        "$(_opie_nova_opt DEFAULT initial_ram_allocation_ratio 1.0)")
    disk_ratio=$(_opie_nova_opt DEFAULT disk_allocation_ratio \
        "$(_opie_nova_opt DEFAULT initial_disk_allocation_ratio 1.0)")
    local reserved_cpus reserved_mem reserved_disk_mb
    reserved_cpus=$(_opie_nova_opt DEFAULT reserved_host_cpus 0)
    reserved_mem=$(_opie_nova_opt DEFAULT reserved_host_memory_mb 512)
    reserved_disk_mb=$(_opie_nova_opt DEFAULT reserved_host_disk_mb 0)

    sudo install -d -o "$STACK_USER" -m 0755 "$OPIE_SCHED_PROVIDER_CONFIG_DIR"
    "$OPIE_SCHED_BIN_DIR/opie-sched" provider-config \
        --vcpus "$vcpus" --memory-mb "$memory_mb" --disk-gb "$disk_gb" \
        --reserved-vcpus "$reserved_cpus" \
        --reserved-memory-mb "$reserved_mem" \
        --reserved-disk-gb $(( (reserved_disk_mb + 1023) / 1024 )) \
        --cpu-allocation-ratio "$cpu_ratio" \
        --ram-allocation-ratio "$ram_ratio" \
        --disk-allocation-ratio "$disk_ratio" \
        --output "$OPIE_SCHED_PROVIDER_CONFIG_FILE" \
        || die $LINENO "opie-sched provider-config failed"
    # nova-compute reads nova-cpu.conf, which DevStack copies from
    # $NOVA_CONF when it starts n-cpu (after this phase).
    iniset "$NOVA_CONF" compute provider_config_location \
        "$OPIE_SCHED_PROVIDER_CONFIG_DIR"
}

function configure_opie_sched {
    # As devcloud does: Placement 16.0.0 retries a conflicting allocation
    # write inside its open transaction, which on MySQL/MariaDB lets
    # concurrent claims exceed an inventory; one attempt hands every
    # conflict back to nova, which retries it in a new request.
    if [[ -n "$PLACEMENT_CONF" ]]; then
        iniset "$PLACEMENT_CONF" placement allocation_conflict_retry_count 1
    fi
    if [[ "$OPIE_SCHED_ENABLE_FILTERS" == "True" ]]; then
        configure_opie_sched_filters
    fi
    if [[ -n "$OPIE_SCHED_COORDINATION_URL" ]]; then
        # Every scheduler host's locks on DevStack's etcd3.
        iniset "$NOVA_CONF" opie_preemption coordination_url \
            "$OPIE_SCHED_COORDINATION_URL"
    fi
    if [[ "$OPIE_SCHED_PROVIDER_CONFIG" == "True" ]] && \
            is_service_enabled n-cpu; then
        configure_opie_sched_provider_config
    fi
    if [[ "$NOVA_USE_UNIFIED_LIMITS" == "True" ]] && \
            is_service_enabled n-api; then
        configure_opie_sched_unified_limits
    fi
}

# A preemptible quota of its own: registered limits of nova (service
# "nova" of $REGION_NAME) for the classes preemptible flavors request, when
# Nova uses Keystone's unified limits. DevStack registered those of the
# standard classes with its Keystone accounts (configure_nova_unified_limits,
# before this phase); an existing limit of ours is updated, so a second
# run changes nothing.
function configure_opie_sched_unified_limits {
    local rc value id
    for rc in VCPU MEMORY_MB DISK_GB; do
        value=OPIE_SCHED_PREEMPTIBLE_${rc}_LIMIT
        value=${!value}
        if [[ -z "$value" ]]; then
            continue
        fi
        id=$(openstack --os-cloud "$OPIE_SCHED_SYSTEM_CLOUD" \
            registered limit list --service nova --region "$REGION_NAME" \
            --resource-name "class:CUSTOM_PREEMPTIBLE_$rc" -f value -c ID)
        if [[ -n "$id" ]]; then
            openstack --os-cloud "$OPIE_SCHED_SYSTEM_CLOUD" \
                registered limit set --default-limit "$value" "$id" \
                || die $LINENO "updating the limit of class:CUSTOM_PREEMPTIBLE_$rc failed"
        else
            openstack --os-cloud "$OPIE_SCHED_SYSTEM_CLOUD" \
                registered limit create --service nova \
                --default-limit "$value" --region "$REGION_NAME" \
                "class:CUSTOM_PREEMPTIBLE_$rc" \
                || die $LINENO "registering the limit of class:CUSTOM_PREEMPTIBLE_$rc failed"
        fi
    done
}

# n-sch is started after the post-config phase, so the swap happens in
# stack extra: replace the devstack@n-sch unit with opie-scheduler.
function start_opie_scheduler {
    local conf="--config-file $NOVA_CONF"
    if [[ -f "$OPIE_SCHED_SCHEDULER_CONF" ]]; then
        conf+=" --config-file $OPIE_SCHED_SCHEDULER_CONF"
    fi
    stop_process n-sch
    run_process n-sch "$OPIE_SCHED_BIN_DIR/opie-scheduler $conf"
}

function create_opie_sched_flavors {
    local base
    for base in $OPIE_SCHED_TWIN_FLAVORS; do
        if ! openstack --os-cloud "$OPIE_SCHED_CLOUD" flavor show "$base" \
                >/dev/null 2>&1; then
            echo "opie_sched: flavor $base not found, no preemptible twin"
            continue
        fi
        if openstack --os-cloud "$OPIE_SCHED_CLOUD" flavor show \
                "$base.preemptible" >/dev/null 2>&1; then
            continue
        fi
        "$OPIE_SCHED_BIN_DIR/opie-sched" --os-cloud "$OPIE_SCHED_CLOUD" \
            flavor create-preemptible "$base" \
            || die $LINENO "creating the preemptible twin of $base failed"
    done
}

# The companion services' OpenStack identity: [service_credentials]
# (keystoneauth options, as DevStack writes a service's [placement]), the
# service user $OPIE_SCHED_SERVICE_USER with the admin role (created in
# start_opie_sched_services: the market reads every project's servers,
# the repacker live-migrates).
function configure_opie_sched_service_credentials {
    local conf=$1
    iniset "$conf" service_credentials auth_type password
    iniset "$conf" service_credentials auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$conf" service_credentials username "$OPIE_SCHED_SERVICE_USER"
    iniset "$conf" service_credentials password "$SERVICE_PASSWORD"
    iniset "$conf" service_credentials user_domain_name "$SERVICE_DOMAIN_NAME"
    iniset "$conf" service_credentials project_name "$SERVICE_PROJECT_NAME"
    iniset "$conf" service_credentials project_domain_name "$SERVICE_DOMAIN_NAME"
    iniset "$conf" service_credentials region_name "$REGION_NAME"
}

# The companion services' configuration file: Nova as the service user of
# [service_credentials], state (sqlite market, locks) in
# $OPIE_SCHED_STATE_DIR.
function configure_opie_sched_services {
    sudo install -d -o "$STACK_USER" "$OPIE_SCHED_CONF_DIR" "$OPIE_SCHED_STATE_DIR"
    iniset "$OPIE_SCHED_CONF" DEFAULT debug "$ENABLE_DEBUG_LOG_LEVEL"
    # The companion services' notifications and RPC on DevStack's broker.
    iniset_rpc_backend opie_sched "$OPIE_SCHED_CONF"
    configure_opie_sched_service_credentials "$OPIE_SCHED_CONF"
    if is_service_enabled opie-market opie-market-api; then
        iniset "$OPIE_SCHED_CONF" opie_market state_dir "$OPIE_SCHED_STATE_DIR/market"
        # The market's database on the cloud's database server, leader
        # election on DevStack's etcd3 (file locks without it).
        iniset "$OPIE_SCHED_CONF" database connection \
            "$(database_connection_url opie_market)"
        iniset "$OPIE_SCHED_CONF" opie_market coordination_url \
            "${OPIE_SCHED_COORDINATION_URL:-file://$OPIE_SCHED_STATE_DIR/locks}"
        iniset "$OPIE_SCHED_CONF" opie_market api_port "$OPIE_SCHED_MARKET_PORT"
        iniset "$OPIE_SCHED_CONF" opie_market api_auth_strategy keystone
        configure_keystone_authtoken_middleware "$OPIE_SCHED_CONF" opie-market
    fi
    if is_service_enabled opie-market-api; then
        configure_opie_sched_market_api
    fi
    if is_service_enabled opie-autoscaler; then
        iniset "$OPIE_SCHED_CONF" opie_autoscaler coordination_url \
            "${OPIE_SCHED_COORDINATION_URL:-file://$OPIE_SCHED_STATE_DIR/locks}"
        if [[ -n "$OPIE_SCHED_AUTOSCALER_APPS" ]]; then
            iniset "$OPIE_SCHED_CONF" opie_autoscaler applications_file \
                "$OPIE_SCHED_AUTOSCALER_APPS"
        fi
        if is_service_enabled opie-market-api; then
            # the spot-market entry of the catalog (registered below)
            iniset "$OPIE_SCHED_CONF" opie_autoscaler market_url catalog
        fi
    fi
    if is_service_enabled opie-repacker; then
        iniset "$OPIE_SCHED_CONF" opie_repacker state_dir "$OPIE_SCHED_STATE_DIR/repacker"
        if [[ -n "$OPIE_SCHED_COORDINATION_URL" ]]; then
            iniset "$OPIE_SCHED_CONF" opie_repacker coordination_url \
                "$OPIE_SCHED_COORDINATION_URL"
        fi
        if [[ "$OPIE_SCHED_REPACKER_EXECUTE" != "True" ]]; then
            iniset "$OPIE_SCHED_CONF" opie_repacker dry_run True
        fi
    fi
}

# The market API under uwsgi behind Apache at $OPIE_SCHED_MARKET_URL_PATH
# (DevStack's write_uwsgi_config: a unix socket and a ProxyPass). The WSGI
# module (opie_sched.wsgi.market) builds the paste pipeline "main" of
# $OPIE_SCHED_MARKET_PASTE (keystonemiddleware) with $OPIE_SCHED_CONF,
# named by uwsgi's env lines.
function configure_opie_sched_market_api {
    write_uwsgi_config "$OPIE_SCHED_MARKET_UWSGI_CONF" \
        "$OPIE_SCHED_MARKET_UWSGI" "$OPIE_SCHED_MARKET_URL_PATH" "" \
        opie-market-api
    iniadd "$OPIE_SCHED_MARKET_UWSGI_CONF" uwsgi env \
        "OPIE_MARKET_CONFIG=$OPIE_SCHED_CONF" \
        "OPIE_MARKET_PASTE=$OPIE_SCHED_MARKET_PASTE"
}

# The market's catalog entry (type spot-market, used by "openstack spot"
# and by opie-autoscaler's market_url = catalog): one URL, behind Apache,
# for the public, internal and admin interfaces.
function create_opie_sched_market_endpoints {
    local market_service url
    url="$SERVICE_PROTOCOL://$SERVICE_HOST$OPIE_SCHED_MARKET_URL_PATH"
    market_service=$(get_or_create_service opie-market spot-market \
        "opie_sched spot market")
    get_or_create_endpoint "$market_service" "$REGION_NAME" \
        "$url" "$url" "$url"
}

function start_opie_sched_services {
    local conf="--config-file $OPIE_SCHED_CONF"
    if is_service_enabled opie-market opie-market-api opie-autoscaler \
            opie-repacker; then
        create_service_user "$OPIE_SCHED_SERVICE_USER" admin
    fi
    if is_service_enabled opie-market opie-market-api; then
        recreate_database opie_market
        "$OPIE_SCHED_BIN_DIR/opie-market" $conf db sync \
            || die $LINENO "opie-market db sync failed"
        create_service_user opie-market admin
        create_opie_sched_market_endpoints
    fi
    run_process opie-market "$OPIE_SCHED_BIN_DIR/opie-market $conf run"
    run_process opie-market-api "$(which uwsgi) --procname-prefix opie-market-api --ini $OPIE_SCHED_MARKET_UWSGI_CONF"
    run_process opie-autoscaler "$OPIE_SCHED_BIN_DIR/opie-autoscaler $conf"
    run_process opie-repacker "$OPIE_SCHED_BIN_DIR/opie-repacker $conf"
}

function stop_opie_sched_services {
    local service
    for service in opie-market opie-market-api opie-autoscaler opie-repacker; do
        stop_process $service
    done
}

function cleanup_opie_sched {
    rm -f "$OPIE_SCHED_PROVIDER_CONFIG_FILE" "$OPIE_SCHED_SCHEDULER_CONF"
    if is_service_enabled opie-market-api; then
        remove_uwsgi_config "$OPIE_SCHED_MARKET_UWSGI_CONF" opie-market-api
    fi
}

# _opie_tempest SECTION OPTION VALUE: set an option of tempest.conf.
function _opie_tempest {
    iniset "$TEMPEST_CONFIG" "$1" "$2" "$3"
}

# tempest.conf for opie_sched_tempest_plugin: the Tempest plugin defaults
# every optional feature to False (a cloud without it skips its tests);
# this turns on what this plugin deployed on this host.
function configure_opie_sched_tempest {
    local market=False preemption=False reliability=False repacker=False
    if is_service_enabled opie-market && is_service_enabled opie-market-api; then
        market=True
    fi
    _opie_tempest service_available opie_market "$market"
    _opie_tempest opie market "$market"
    if [[ "$market" == "True" ]]; then
        # The API's URL comes from the catalog (service type spot-market).
        _opie_tempest opie market_service_type spot-market
        local notice
        notice=$(iniget "$OPIE_SCHED_CONF" opie_market notice_period)
        if [[ -n "$notice" ]]; then
            _opie_tempest opie market_notice_period "$notice"
        fi
    fi
    # Preemption needs opie-scheduler as n-sch with opie_sched's filters,
    # the preemptible inventory (provider config) and preemptible flavors.
    if [[ "$OPIE_SCHED_ENABLE_SCHEDULER" == "True" && \
            "$OPIE_SCHED_ENABLE_FILTERS" == "True" && \
            "$OPIE_SCHED_PROVIDER_CONFIG" == "True" && \
            -n "$OPIE_SCHED_TWIN_FLAVORS" ]] && \
            is_service_enabled n-sch; then
        preemption=True
        _opie_tempest opie preemptible_flavor_suffix .preemptible
    fi
    _opie_tempest opie preemption "$preemption"
    # Die-Hard: what the scheduler options file actually enables.
    if [[ -f "$OPIE_SCHED_SCHEDULER_CONF" ]] && \
            grep -q FailureDomainFilter "$OPIE_SCHED_SCHEDULER_CONF"; then
        reliability=True
    fi
    _opie_tempest opie reliability "$reliability"
    if is_service_enabled opie-repacker; then
        repacker=True
        _opie_tempest opie repacker_command \
            "$OPIE_SCHED_BIN_DIR/opie-repacker --config-file $OPIE_SCHED_CONF"
    fi
    _opie_tempest opie repacker "$repacker"
    # The autoscaler scenario needs an application described by the
    # autoscaler_* options, which DevStack does not create.
    _opie_tempest opie autoscaler False
    # Nova's quotas are Keystone's unified limits: Tempest's own option,
    # which our tests read too (the preemptible quota scenario; project
    # limits instead of os-quota-sets for the fills).
    if [[ "$NOVA_USE_UNIFIED_LIMITS" == "True" ]]; then
        _opie_tempest compute-feature-enabled unified_limits True
    fi
}

# Dispatch
# --------

if is_service_enabled nova; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing opie_sched"
        install_opie_sched

    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring Nova for opie_sched"
        configure_opie_sched
        if is_service_enabled opie-market opie-market-api opie-autoscaler opie-repacker; then
            configure_opie_sched_services
        fi

    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        if [[ "$OPIE_SCHED_ENABLE_SCHEDULER" == "True" ]] && \
                is_service_enabled n-sch; then
            echo_summary "Starting opie-scheduler as n-sch"
            start_opie_scheduler
        fi
        if is_service_enabled n-api && [[ -n "$OPIE_SCHED_TWIN_FLAVORS" ]]; then
            echo_summary "Creating preemptible flavors"
            create_opie_sched_flavors
        fi
        if is_service_enabled opie-market opie-market-api opie-autoscaler opie-repacker; then
            echo_summary "Starting the opie_sched companion services"
            start_opie_sched_services
        fi

    elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
        if is_service_enabled tempest; then
            echo_summary "Configuring Tempest for opie_sched"
            configure_opie_sched_tempest
        fi
    fi

    if [[ "$1" == "unstack" ]]; then
        if [[ "$OPIE_SCHED_ENABLE_SCHEDULER" == "True" ]]; then
            stop_process n-sch
        fi
        stop_opie_sched_services
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_opie_sched
    fi
fi

$XTRACE_OPIE_SCHED
