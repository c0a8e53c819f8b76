#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for trying `satquic campaign slurm` and
# for its test: munge, slurmctld and slurmd on localhost, one partition ("local") with
# this host's CPUs and memory as `slurmd -C` sees them.
#
#   scripts/slurm-local.sh start    install (Debian: slurm-wlm, munge) if missing, write
#                                   the configuration, start the daemons and wait until
#                                   `sinfo` shows the node idle; does nothing that is
#                                   already done, so it can run any number of times
#   scripts/slurm-local.sh stop     stop slurmctld, slurmd and munged
#   scripts/slurm-local.sh status   sinfo, or why there is no cluster
#
# Runs as root. Daemons are started directly, not through systemd (containers and CI
# machines often have no init system); jobs run as the submitting user. The
# configuration goes to /etc/slurm/slurm.conf, and a slurm.conf this script did not
# write is never replaced: the script stops with the reason instead.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
MARK="# Written by satquic scripts/slurm-local.sh"
STATE=/var/spool/slurmctld
SPOOL=/var/spool/slurmd
LOGS=/var/log/slurm
WAIT_S=${SLURM_LOCAL_WAIT_S:-60}

die() {
    echo "slurm-local: $*" >&2
    exit 1
}

# Runs a daemon with nothing of ours: no descriptor but /dev/null, so that one started
# from a test or a CI step never holds that caller's pipes open (munged keeps whatever it
# inherits).
detached() {
    (
        for fd in /proc/self/fd/*; do
            fd=${fd##*/}
            if [ "$fd" -gt 2 ] 2>/dev/null; then
                eval "exec $fd>&-" 2>/dev/null || true
            fi
        done
        exec "$@" </dev/null >/dev/null 2>&1
    )
}

need_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (installs packages and starts daemons)"
}

install_packages() {
    local missing=()
    command -v slurmctld >/dev/null || missing+=(slurmctld)
    command -v slurmd >/dev/null || missing+=(slurmd)
    command -v sbatch >/dev/null || missing+=(slurm-client)
    command -v munged >/dev/null || missing+=(munge)
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || die "slurm is not installed and there is no apt-get to install it (${missing[*]})"
    echo "slurm-local: installing slurm-wlm munge" >&2
    export DEBIAN_FRONTEND=noninteractive
    # The package lists of a fresh machine may be empty or stale.
    apt-get update -qq || die "apt-get update failed"
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null ||
        die "apt-get install slurm-wlm munge failed"
}

start_munge() {
    if [ ! -s /etc/munge/munge.key ]; then
        install -d -o munge -g munge -m 0700 /etc/munge
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        chown munge:munge /etc/munge/munge.key
        chmod 0400 /etc/munge/munge.key
    fi
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
    if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
        return 0
    fi
    # munged refuses to run as root; it runs as the munge user the package created.
    detached runuser -u munge -- /usr/sbin/munged ||
        die "munged did not start (see /var/log/munge/munged.log)"
    for _ in $(seq 1 50); do
        munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    die "munged runs but does not answer (see /var/log/munge/munged.log)"
}

write_conf() {
    local node host
    # "NodeName=vm CPUs=2 Boards=1 ... RealMemory=24105": what slurmd will find, so the
    # node never drains for having less than configured.
    node=$(slurmd -C | head -n 1)
    case "$node" in
    NodeName=*) ;;
    *) die "slurmd -C printed no node line: $node" ;;
    esac
    host=${node%% *}
    host=${host#NodeName=}
    if [ -e "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
        die "$CONF exists and was not written by this script; not replacing it"
    fi
    local text
    text="$MARK
ClusterName=satquic-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE
SlurmdSpoolDir=$SPOOL
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
# No cgroups: containers often have none to give.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# scancel: SIGTERM, then SIGKILL after this many seconds.
KillWait=5
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP"
    if [ -e "$CONF" ] && [ "$(cat "$CONF")" = "$text" ]; then
        return 0
    fi
    printf '%s\n' "$text" >"$CONF"
    # A running slurmctld must read the new file: restart it below.
    stop_slurm
}

node_name() {
    sed -n 's/^NodeName=\([^ ]*\).*/\1/p' "$CONF" | head -n 1
}

node_state() {
    sinfo -h -N -n "$(node_name)" -o %T 2>/dev/null | head -n 1
}

start_slurm() {
    install -d -m 0755 "$STATE" "$SPOOL" "$LOGS"
    if ! scontrol ping 2>/dev/null | grep -q "is UP"; then
        detached slurmctld || die "slurmctld did not start (see $LOGS/slurmctld.log)"
    fi
    if ! pgrep -F /run/slurmd.pid >/dev/null 2>&1; then
        detached slurmd || die "slurmd did not start (see $LOGS/slurmd.log)"
    fi
    local state=""
    for _ in $(seq 1 $((WAIT_S * 5))); do
        state=$(node_state)
        case "$state" in
        idle | mixed | allocated)
            sinfo
            return 0
            ;;
        down* | drain*)
            # Left down by an earlier stop or a restarted slurmd: this script owns the node.
            scontrol update NodeName="$(node_name)" State=RESUME 2>/dev/null || true
            ;;
        esac
        sleep 0.2
    done
    die "the node is not idle after ${WAIT_S} s (sinfo: ${state:-no answer}; see $LOGS/slurmctld.log and $LOGS/slurmd.log)"
}

stop_slurm() {
    local pidfile pid
    for pidfile in /run/slurmctld.pid /run/slurmd.pid; do
        pid=$(cat "$pidfile" 2>/dev/null || true)
        [ -n "$pid" ] || continue
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
        rm -f "$pidfile"
    done
    return 0
}

stop_munge() {
    local pid
    pid=$(cat /run/munge/munged.pid 2>/dev/null || true)
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
}

case "${1:-}" in
start)
    need_root
    install_packages
    start_munge
    write_conf
    start_slurm
    ;;
stop)
    need_root
    stop_slurm
    stop_munge
    ;;
status)
    if ! command -v sinfo >/dev/null; then
        die "slurm is not installed (scripts/slurm-local.sh start installs it)"
    fi
    sinfo
    ;;
*)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
