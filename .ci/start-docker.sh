#!/bin/sh
# Start a Docker engine for the real-engine tests (idempotent).
#
# Usage: .ci/start-docker.sh            # installs docker.io if needed, starts dockerd, waits for the socket
# Env:   DOCKER_START_TIMEOUT (seconds, default 60), DOCKERD_LOG (default /tmp/dockerd.log),
#        DOCKERD_NET_ARGS (default "--iptables=false --ip-masq=false"),
#        DOCKERD_EXTRA_ARGS (appended to the dockerd command line)
#
# What works in the evalmanifest sandbox (no systemd, cgroup v1 hybrid, ext4 root, no registry), verified
# with Docker 20.10.24 (Debian docker.io), runc 1.1.5, containerd 1.6.20:
#   dockerd --iptables=false --ip-masq=false --host=unix:///var/run/docker.sock
#   storage driver overlay2 (dockerd's choice on ext4), cgroupfs driver, cgroup v1; memory, CPU (CFS
#   quota), pids limits and memcg OOM kills all enforced and observable inside containers.
# --iptables=false/--ip-masq=false keep dockerd from rewriting the host's netfilter rules: the tests run
# with network none (internet denied); bridged containers get an address but no NAT to the outside.
# On a host where containers need outbound internet, set DOCKERD_NET_ARGS="" to let dockerd manage NAT.
set -u

SOCK=/var/run/docker.sock
TIMEOUT=${DOCKER_START_TIMEOUT:-60}
LOG=${DOCKERD_LOG:-/tmp/dockerd.log}

say() { echo "start-docker: $*" >&2; }

diagnose() {
    say "diagnostics follow"
    echo "--- uname: $(uname -a)" >&2
    echo "--- id: $(id)" >&2
    echo "--- cgroup mounts:" >&2
    mount | grep -E 'cgroup' >&2 || true
    echo "--- /proc/self/cgroup:" >&2
    cat /proc/self/cgroup >&2 || true
    echo "--- dockerd processes:" >&2
    ps -eo pid,args 2>/dev/null | grep -E '[d]ockerd|[c]ontainerd' >&2 || true
    echo "--- last 40 lines of $LOG:" >&2
    tail -n 40 "$LOG" >&2 2>/dev/null || true
}

engine_up() {
    docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

if engine_up; then
    say "engine already running: $(docker version --format '{{.Server.Version}}' 2>/dev/null)"
    exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
    say "dockerd not found; installing docker.io"
    if command -v apt-get >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io >/tmp/apt-docker.log 2>&1 || {
            apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io >/tmp/apt-docker.log 2>&1
        } || { say "apt-get install docker.io failed"; tail -n 20 /tmp/apt-docker.log >&2; exit 1; }
    else
        say "no dockerd and no apt-get: install Docker Engine first"; exit 1
    fi
fi

# A stale pid file from a killed dockerd prevents a restart.
if [ -f /var/run/docker.pid ]; then
    pid=$(cat /var/run/docker.pid 2>/dev/null || echo)
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
        say "removing stale /var/run/docker.pid ($pid)"
        rm -f /var/run/docker.pid
    fi
fi
if [ -S "$SOCK" ] && ! pgrep -x dockerd >/dev/null 2>&1; then
    rm -f "$SOCK"
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
    say "starting dockerd (log: $LOG)"
    # --iptables=false/--ip-masq=false: the sandbox cannot program netfilter; containers that need no
    # network (evals with internet denied) are unaffected, bridged containers still get an address.
    # shellcheck disable=SC2086
    nohup dockerd ${DOCKERD_NET_ARGS---iptables=false --ip-masq=false} --host=unix://$SOCK ${DOCKERD_EXTRA_ARGS:-} \
        >"$LOG" 2>&1 </dev/null &
fi

i=0
while [ "$i" -lt "$TIMEOUT" ]; do
    if [ -S "$SOCK" ] && engine_up; then
        say "engine up after ${i}s: server $(docker version --format '{{.Server.Version}}'), $(docker info --format 'cgroup v{{.CgroupVersion}} driver={{.CgroupDriver}} storage={{.Driver}}' 2>/dev/null)"
        exit 0
    fi
    if ! pgrep -x dockerd >/dev/null 2>&1 && [ "$i" -gt 2 ]; then
        say "dockerd exited during startup"
        diagnose
        exit 1
    fi
    sleep 1
    i=$((i + 1))
done
say "timed out after ${TIMEOUT}s waiting for $SOCK"
diagnose
exit 1
