#!/usr/bin/env bash
# Local Apache Cassandra 5 for development and tests, without Docker or a Debian package.
#
#   cassandra.sh start [--nodes N] [--first-address A] [--heap SIZE] [--timeout SECONDS]
#   cassandra.sh stop [--first-address A]
#                                      stops every node this script started (safe to repeat); with
#                                      --first-address, only the nodes of that layout
#   cassandra.sh status
#   cassandra.sh run [--nodes N] [--first-address A] -- CMD...
#                                      starts Cassandra unless it already runs, runs CMD, and
#                                      stops what it started even when CMD fails or is interrupted
#   cassandra.sh clean                 deletes the node data directories (refuses while running)
#   cassandra.sh nodetool [--first-address A] [--node I] ARGS...
#                                      Cassandra's nodetool against node I (default 1) over local JMX
#
# The server comes from Maven Central (org.apache.cassandra:cassandra-all, see pom.xml), resolved
# once into $VSS_CASSANDRA_HOME/lib (default <repo>/.cassandra/lib). Each node i of an N-node
# cluster lives in $VSS_CASSANDRA_HOME/c<N>/node<i> (yaml, logback.xml, data, logs, pid file),
# listens on 127.0.0.<i> (native port 9042, storage port 7000, JMX 7<i>99 on 127.0.0.1) and the
# cluster is named vss-local-<N>, so a one-node and a three-node cluster never share data.
# Loopback addresses 127.0.0.2+ work on Linux with no setup.
#
# --first-address A (or VSS_CASSANDRA_FIRST_ADDRESS=A; default 1) puts node i on 127.0.0.<A+i-1>
# instead, with JMX on 127.0.0.1:<7099 + 100 x (A+i-1)>, its directories in
# $VSS_CASSANDRA_HOME/c<N>-a<A>/node<i> and the cluster named vss-local-<N>-a<A>: a cluster that
# runs beside another, e.g. `start --nodes 3 --first-address 11` (127.0.0.11-13, JMX 8199, 8299,
# 8399) beside a one-node cluster on 127.0.0.1. Give it its own VSS_CASSANDRA_HOME too, so that a
# plain `stop` there cannot reach the other cluster.
#
# Environment: VSS_CASSANDRA_HOME (cache dir), VSS_CASSANDRA_FIRST_ADDRESS, CASSANDRA_HEAP (default
#              1G), JAVA (default java), MVN (default mvn).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/../.." && pwd)
HOME_DIR=${VSS_CASSANDRA_HOME:-$REPO/.cassandra}
LIB="$HOME_DIR/lib"
JAVA=${JAVA:-java}
MVN=${MVN:-mvn}
CASSANDRA_VERSION=5.0.9
NATIVE_PORT=9042
FIRST=${VSS_CASSANDRA_FIRST_ADDRESS:-1}

log() { printf '[cassandra] %s\n' "$*" >&2; }
die() { printf '[cassandra] ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# Classpath
# ---------------------------------------------------------------------------------------------
check_java() {
  command -v "$JAVA" >/dev/null 2>&1 || die "java not found (set JAVA=/path/to/java; Cassandra 5 needs Java 11 or 17)"
  local v
  v=$("$JAVA" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
  case "$v" in
    17) ;;
    11) die "Java 11 found; this script writes the Java 17 flags (jvm17-server.options). Use Java 17." ;;
    *) die "Java $v found; Cassandra $CASSANDRA_VERSION runs on Java 11 or 17 (this script uses 17)" ;;
  esac
}

resolve_classpath() {
  local stamp="$LIB/.resolved-$CASSANDRA_VERSION"
  if [[ -f "$stamp" ]]; then return 0; fi
  command -v "$MVN" >/dev/null 2>&1 || die "mvn not found: it is needed once to download Cassandra $CASSANDRA_VERSION from Maven Central into $LIB"
  log "resolving cassandra-all $CASSANDRA_VERSION from Maven Central into $LIB (once; ~67 MB)"
  local tmp="$HOME_DIR/lib.tmp.$$" mlog="$HOME_DIR/mvn.log"
  rm -rf "$tmp"
  mkdir -p "$HOME_DIR"
  if ! "$MVN" -B -f "$SCRIPT_DIR/pom.xml" org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$tmp" >"$mlog" 2>&1; then
    rm -rf "$tmp"
    grep -E '^\[ERROR\]' "$mlog" | head -n 15 >&2 || tail -n 20 "$mlog" >&2
    die "Maven could not resolve org.apache.cassandra:cassandra-all:$CASSANDRA_VERSION (is Maven Central reachable? full log: $mlog)"
  fi
  compgen -G "$tmp/cassandra-all-*.jar" >/dev/null || die "Maven finished but no cassandra-all jar in $tmp (log: $mlog)"
  compgen -G "$tmp/jamm-*.jar" >/dev/null || die "Maven finished but no jamm jar in $tmp (log: $mlog)"
  rm -rf "$LIB"
  mv "$tmp" "$LIB"
  touch "$stamp"
  log "classpath ready: $(ls "$LIB"/*.jar | wc -l) jars, $(du -sh "$LIB" | cut -f1)"
}

# ---------------------------------------------------------------------------------------------
# Node layout and configuration
# ---------------------------------------------------------------------------------------------
# The layout's directory: c<N>, or c<N>-a<A> off the default first address.
layout_dir() { if (( FIRST == 1 )); then echo "$HOME_DIR/c$1"; else echo "$HOME_DIR/c$1-a$FIRST"; fi; }
node_dir() { echo "$(layout_dir "$1")/node$2"; }   # cluster size, node index
node_ip() { echo "127.0.0.$(( FIRST + $1 - 1 ))"; }
jmx_port() { echo "$(( 7099 + 100 * (FIRST + $1 - 1) ))"; }
cluster_name() { if (( FIRST == 1 )); then echo "vss-local-$1"; else echo "vss-local-$1-a$FIRST"; fi; }
# The first address of the layout a node directory belongs to (from its c<N>[-a<A>] name).
first_of_dir() { local l; l=$(basename "$(dirname "$1")"); if [[ "$l" == *-a* ]]; then echo "${l##*-a}"; else echo 1; fi; }
check_first() {
  [[ "$FIRST" =~ ^[1-9][0-9]{0,2}$ ]] && (( FIRST + ${1:-1} - 1 <= 254 )) || die "--first-address must be 1..254 and leave room for the nodes (got $FIRST)"
}

write_config() {
  local n=$1 i=$2 dir ip
  dir=$(node_dir "$n" "$i")
  ip=$(node_ip "$i")
  mkdir -p "$dir/conf" "$dir/data" "$dir/commitlog" "$dir/saved_caches" "$dir/hints" "$dir/cdc_raw" "$dir/logs"
  # Small-machine settings. concurrent_writes must stay <= CPUs + 1: with the stock 32, vector
  # writes fail under concurrency with a generic "Server failure during write query".
  cat >"$dir/conf/cassandra.yaml" <<EOF
# Written by scripts/cassandra/cassandra.sh on every start; edits here are overwritten.
cluster_name: $(cluster_name "$n")
num_tokens: 16
allocate_tokens_for_local_replication_factor: $(( n < 3 ? n : 3 ))
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
storage_compatibility_mode: NONE
default_secondary_index: sai
default_secondary_index_enabled: true
sai_options:
  segment_write_buffer_size: 128MiB

seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$(node_ip 1):7000"
listen_address: $ip
rpc_address: $ip
storage_port: 7000
native_transport_port: $NATIVE_PORT
start_native_transport: true
endpoint_snitch: SimpleSnitch

authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
role_manager: CassandraRoleManager
network_authorizer: AllowAllNetworkAuthorizer

data_file_directories:
  - $dir/data
commitlog_directory: $dir/commitlog
saved_caches_directory: $dir/saved_caches
hints_directory: $dir/hints
cdc_raw_directory: $dir/cdc_raw

commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_segment_size: 32MiB
disk_failure_policy: stop
commit_failure_policy: stop

concurrent_reads: 4
concurrent_writes: 3
concurrent_counter_writes: 2
concurrent_materialized_view_writes: 2
concurrent_compactors: 1
concurrent_index_builders: 1
memtable_flush_writers: 1
memtable_heap_space: 96MiB
memtable_offheap_space: 96MiB
memtable_allocation_type: heap_buffers
key_cache_size: 16MiB
counter_cache_size: 0MiB
file_cache_size: 64MiB
native_transport_max_threads: 32

read_request_timeout: 10000ms
range_request_timeout: 20000ms
write_request_timeout: 5000ms
counter_write_request_timeout: 5000ms
request_timeout: 20000ms
truncate_request_timeout: 60000ms

hinted_handoff_enabled: true
auto_snapshot: false
snapshot_on_duplicate_row_detection: false
batch_size_warn_threshold: 32KiB
batch_size_fail_threshold: 50KiB
dynamic_snitch: true
EOF

  cat >"$dir/conf/logback.xml" <<EOF
<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.rolling.RollingFileAppender">
    <file>$dir/logs/system.log</file>
    <rollingPolicy class="ch.qos.logback.core.rolling.SizeAndTimeBasedRollingPolicy">
      <fileNamePattern>$dir/logs/system.log.%d{yyyy-MM-dd}.%i.gz</fileNamePattern>
      <maxFileSize>20MB</maxFileSize>
      <maxHistory>3</maxHistory>
      <totalSizeCap>100MB</totalSizeCap>
    </rollingPolicy>
    <encoder>
      <pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern>
    </encoder>
  </appender>
  <appender name="ASYNC" class="ch.qos.logback.classic.AsyncAppender">
    <queueSize>1024</queueSize>
    <discardingThreshold>0</discardingThreshold>
    <includeCallerData>true</includeCallerData>
    <appender-ref ref="FILE" />
  </appender>
  <root level="INFO">
    <appender-ref ref="ASYNC" />
  </root>
  <logger name="org.apache.cassandra" level="INFO" />
  <logger name="com.thinkaurelius.thrift" level="ERROR" />
</configuration>
EOF
}

# Cassandra's conf/jvm-server.options + conf/jvm17-server.options (cassandra-5.0 branch), minus
# -XX:+AlwaysPreTouch (it would make the whole heap resident at once on a shared machine),
# -XX:+HeapDumpOnOutOfMemoryError and -XX:-UseBiasedLocking (deprecated on 17), plus what
# cassandra-env.sh adds (jamm agent, JMX on localhost, config and log locations).
jvm_flags() {
  local n=$1 i=$2 heap=$3 dir jamm
  dir=$(node_dir "$n" "$i")
  jamm=$(compgen -G "$LIB/jamm-*.jar" | head -n 1)
  printf '%s\n' \
    "-Xms$heap" "-Xmx$heap" \
    -ea -da:net.openhft... \
    -XX:+UseThreadPriorities -Xss256k -XX:+UseTLAB -XX:+ResizeTLAB -XX:+UseNUMA -XX:+PerfDisableSharedMem \
    -Djava.net.preferIPv4Stack=true -XX:+ExitOnOutOfMemoryError \
    -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1 -XX:G1HeapRegionSize=16m \
    -XX:G1RSetUpdatingPauseTimePercent=5 -XX:MaxGCPauseMillis=300 -XX:InitiatingHeapOccupancyPercent=70 \
    -Djdk.attach.allowAttachSelf=true \
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
    --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED \
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED \
    --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED \
    --add-exports java.sql/java.sql=ALL-UNNAMED \
    --add-exports java.base/java.lang.ref=ALL-UNNAMED \
    --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED \
    --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED \
    --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED \
    --add-opens java.base/java.lang.module=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.loader=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.module=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED \
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
    --add-opens java.base/java.io=ALL-UNNAMED \
    --add-opens java.base/java.lang.reflect=ALL-UNNAMED \
    --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED \
    --add-opens java.base/java.lang=ALL-UNNAMED \
    --add-opens java.base/java.util=ALL-UNNAMED \
    -Dio.netty.tryReflectionSetAccessible=true \
    -Dio.netty.allocator.useCacheForAllThreads=true \
    -Dio.netty.allocator.maxOrder=11 \
    "-javaagent:$jamm" \
    "-Dcassandra.jmx.local.port=$(jmx_port "$i")" \
    -Dcom.sun.management.jmxremote.authenticate=false \
    "-Dcassandra.config=file://$dir/conf/cassandra.yaml" \
    "-Dlogback.configurationFile=file://$dir/conf/logback.xml" \
    "-Dcassandra.logdir=$dir/logs" \
    "-Dcassandra.storagedir=$dir" \
    -Dcassandra-foreground=yes \
    -Dcassandra.skip_wait_for_gossip_to_settle=0 \
    -Dcassandra.ring_delay_ms=5000 \
    -Dcassandra.consistent.rangemovement=false \
    "-XX:ErrorFile=$dir/logs/hs_err_%p.log" \
    -cp "$LIB/*" \
    org.apache.cassandra.service.CassandraDaemon
}

# ---------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------
# Prints the pid recorded in a pid file when that process is alive and is our Cassandra.
live_pid() {
  local pidfile=$1 pid
  [[ -f "$pidfile" ]] || return 1
  pid=$(cat "$pidfile" 2>/dev/null || true)
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  # Guard against a recycled pid: the command line must be a CassandraDaemon of this node dir.
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "CassandraDaemon" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$(dirname "$pidfile")/conf/cassandra.yaml" || return 1
  echo "$pid"
}

all_pidfiles() { compgen -G "$HOME_DIR/c*/node*/cassandra.pid" || true; }

running_nodes() {
  local f
  for f in $(all_pidfiles); do
    if live_pid "$f" >/dev/null; then echo "$f"; fi
  done
}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# Runs a CQL query through the project's own driver: proves the node serves CQL, not just TCP.
cql_ready() {
  local ip=$1
  (cd "$REPO" && timeout 15 node -e "
    const { Client } = require('cassandra-driver');
    const c = new Client({ contactPoints: ['$ip:$NATIVE_PORT'], localDataCenter: 'datacenter1',
      pooling: { coreConnectionsPerHost: { 0: 1, 1: 1, 2: 0 } } });
    c.execute('SELECT release_version FROM system.local')
      .then((r) => { console.log(r.first().release_version); return c.shutdown(); })
      .then(() => process.exit(0), () => process.exit(1));
  " 2>/dev/null)
}

wait_ready() {
  local n=$1 i=$2 timeout=$3 pid=$4 mark=${5:-0} dir ip start version
  dir=$(node_dir "$n" "$i")
  ip=$(node_ip "$i")
  start=$SECONDS
  while (( SECONDS - start < timeout )); do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "node $i (pid $pid) exited during startup; last lines of $dir/logs:"
      tail -n 15 "$dir/logs/stdout.log" >&2 2>/dev/null || true
      tail -n "+$((mark + 1))" "$dir/logs/system.log" 2>/dev/null | grep -E '^(ERROR|WARN)|Exception' | tail -n 10 >&2 || true
      return 1
    fi
    if port_open "$ip" "$NATIVE_PORT" && version=$(cql_ready "$ip"); then
      log "node $i ready on $ip:$NATIVE_PORT (Cassandra $version, pid $pid, $(( SECONDS - start ))s)"
      return 0
    fi
    sleep 1
  done
  log "node $i did not answer CQL on $ip:$NATIVE_PORT within ${timeout}s; last lines of $dir/logs/system.log:"
  tail -n "+$((mark + 1))" "$dir/logs/system.log" 2>/dev/null | tail -n 15 >&2 || true
  return 1
}

start_node() {
  local n=$1 i=$2 heap=$3 timeout=$4 dir ip pid
  dir=$(node_dir "$n" "$i")
  ip=$(node_ip "$i")
  if port_open "$ip" "$NATIVE_PORT"; then
    log "ERROR: something already listens on $ip:$NATIVE_PORT (another Cassandra?); stop it first"
    return 1
  fi
  if port_open "$ip" 7000; then
    log "ERROR: something already listens on $ip:7000 (storage port); stop it first"
    return 1
  fi
  write_config "$n" "$i"
  local -a flags
  mapfile -t flags < <(jvm_flags "$n" "$i" "$heap")
  log "starting node $i of $n on $ip (heap $heap, logs in $dir/logs)"
  rm -f "$dir/cassandra.pid"   # a stale one (node killed) would be mistaken for the new JVM
  local mark
  mark=$(wc -l 2>/dev/null <"$dir/logs/system.log" || echo 0)
  # setsid: the JVM outlives this shell and its terminal; exec keeps the pid written to the file.
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$dir/cassandra.pid" "$JAVA" "${flags[@]}" \
    </dev/null >"$dir/logs/stdout.log" 2>&1 &
  local t=0
  while [[ ! -s "$dir/cassandra.pid" ]] && (( t < 50 )); do sleep 0.1; t=$((t + 1)); done
  pid=$(cat "$dir/cassandra.pid" 2>/dev/null || true)
  [[ -n "$pid" ]] || { log "ERROR: could not launch java for node $i (see $dir/logs/stdout.log)"; return 1; }
  wait_ready "$n" "$i" "$timeout" "$pid" "$mark"
}

stop_pidfile() {
  local f=$1 grace=${2:-60} pid t
  if ! pid=$(live_pid "$f"); then rm -f "$f"; return 0; fi
  log "stopping $(basename "$(dirname "$f")") of $(basename "$(dirname "$(dirname "$f")")") (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  t=0
  while kill -0 "$pid" 2>/dev/null && (( t < grace * 10 )); do sleep 0.1; t=$((t + 1)); done
  if kill -0 "$pid" 2>/dev/null; then
    log "pid $pid still alive after ${grace}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    t=0
    while kill -0 "$pid" 2>/dev/null && (( t < 100 )); do sleep 0.1; t=$((t + 1)); done
  fi
  rm -f "$f"
}

cmd_stop() {
  # SIGTERM to every node at once (each drains in ~10 s), then wait; SIGKILL what outlives the grace.
  local f pid grace=${STOP_GRACE:-90} t only=""
  while (( $# )); do
    case "$1" in
      --first-address) FIRST=${2:?--first-address needs a number}; only=1; shift 2 ;;
      --first-address=*) FIRST=${1#*=}; only=1; shift ;;
      *) die "unknown option for stop: $1" ;;
    esac
  done
  [[ -z "$only" ]] || check_first
  local -a files=() pids=()
  for f in $(all_pidfiles); do
    if [[ -n "$only" ]] && [[ "$(first_of_dir "$(dirname "$f")")" != "$FIRST" ]]; then continue; fi
    if pid=$(live_pid "$f"); then
      log "stopping $(basename "$(dirname "$f")") of $(basename "$(dirname "$(dirname "$f")")") (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      files+=("$f"); pids+=("$pid")
    else
      rm -f "$f"
    fi
  done
  if (( ${#pids[@]} == 0 )); then
    log "no Cassandra started by this script is running"
    return 0
  fi
  t=0
  while (( t < grace * 10 )); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    (( alive )) || break
    sleep 0.1; t=$((t + 1))
  done
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid still alive after ${grace}s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for pid in "${pids[@]}"; do
    t=0; while kill -0 "$pid" 2>/dev/null && (( t < 100 )); do sleep 0.1; t=$((t + 1)); done
  done
  rm -f "${files[@]}"
  log "stopped ${#pids[@]} node(s)"
}

cmd_start() {
  local nodes=1 heap=${CASSANDRA_HEAP:-1G} timeout=180
  while (( $# )); do
    case "$1" in
      --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
      --nodes=*) nodes=${1#*=}; shift ;;
      --heap) heap=${2:?--heap needs a size like 1G}; shift 2 ;;
      --heap=*) heap=${1#*=}; shift ;;
      --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
      --timeout=*) timeout=${1#*=}; shift ;;
      --first-address) FIRST=${2:?--first-address needs a number}; shift 2 ;;
      --first-address=*) FIRST=${1#*=}; shift ;;
      *) die "unknown option for start: $1" ;;
    esac
  done
  [[ "$nodes" =~ ^[1-9]$ ]] || die "--nodes must be 1..9 (got $nodes)"
  check_first "$nodes"
  # Nodes of another layout whose addresses overlap this one's (e.g. a 1-node cluster while 3 are
  # asked for on the same first address): refuse.
  local f foreign="" other size
  for f in $(running_nodes); do
    [[ "$f" == "$(layout_dir "$nodes")/"* ]] && continue
    other=$(first_of_dir "$(dirname "$f")")
    size=$(basename "$(dirname "$(dirname "$f")")"); size=${size#c}; size=${size%%-*}
    (( other + size - 1 < FIRST || FIRST + nodes - 1 < other )) || foreign+="$f "
  done
  [[ -z "$foreign" ]] || die "a different Cassandra layout is running ($foreign); run '$0 stop' first"
  check_java
  resolve_classpath
  local t0=$SECONDS i started=0 pf
  local -a launched=()
  for (( i = 1; i <= nodes; i++ )); do
    if live_pid "$(node_dir "$nodes" "$i")/cassandra.pid" >/dev/null; then
      log "node $i of $nodes already running"
      continue
    fi
    # Nodes join one at a time (a joining node must see the ring settle first).
    launched+=("$(node_dir "$nodes" "$i")/cassandra.pid")
    if ! start_node "$nodes" "$i" "$heap" "$timeout"; then
      log "startup failed; stopping the node(s) this command started"
      for pf in "${launched[@]}"; do stop_pidfile "$pf" 20; done
      exit 1
    fi
    started=$((started + 1))
  done
  (( started > 0 )) || { log "already running ($nodes node(s)); nothing to do"; return 0; }
  log "cluster of $nodes node(s) up in $(( SECONDS - t0 ))s; contact points: $(for (( i = 1; i <= nodes; i++ )); do printf '%s ' "$(node_ip "$i")"; done)"
}

cmd_status() {
  local f pid dir ip i rss found=0
  for f in $(all_pidfiles); do
    found=1
    dir=$(dirname "$f")
    i=${dir##*/node}
    FIRST=$(first_of_dir "$dir")
    ip=$(node_ip "$i")
    if pid=$(live_pid "$f"); then
      rss=$(awk '/VmRSS/ {printf "%d MB", $2/1024}' "/proc/$pid/status" 2>/dev/null || echo '?')
      if port_open "$ip" "$NATIVE_PORT"; then
        echo "$(basename "$(dirname "$dir")")/node$i  $ip  pid $pid  rss $rss  native port open"
      else
        echo "$(basename "$(dirname "$dir")")/node$i  $ip  pid $pid  rss $rss  native port closed (starting or stopping)"
      fi
    else
      echo "$(basename "$(dirname "$dir")")/node$i  $ip  not running (stale pid file)"
    fi
  done
  (( found )) || echo "no Cassandra started by this script"
  return 0
}

cmd_clean() {
  [[ -z "$(running_nodes)" ]] || die "Cassandra is running; stop it first"
  rm -rf "$HOME_DIR"/c[0-9]*
  log "removed node directories under $HOME_DIR (the jar cache in $LIB is kept)"
}

cmd_run() {
  local -a start_args=()
  while (( $# )) && [[ "$1" != "--" ]]; do start_args+=("$1"); shift; done
  [[ "${1:-}" == "--" ]] && shift
  (( $# )) || die "usage: $0 run [--nodes N] [--first-address A] -- command..."
  local a
  for (( a = 0; a < ${#start_args[@]}; a++ )); do
    case "${start_args[a]}" in
      --first-address) FIRST=${start_args[a + 1]:-$FIRST} ;;
      --first-address=*) FIRST=${start_args[a]#*=} ;;
    esac
  done
  local mine=""
  for a in $(running_nodes); do [[ "$(first_of_dir "$(dirname "$a")")" == "$FIRST" ]] && mine=1; done
  if [[ -z "$mine" ]]; then
    trap 'log "stopping Cassandra started for this run"; cmd_stop --first-address "$FIRST"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
  else
    log "using the Cassandra that is already running (it is left running)"
  fi
  cmd_start "${start_args[@]}"
  local rc=0
  "$@" || rc=$?
  exit "$rc"
}

cmd_nodetool() {
  local i=1
  if [[ "${1:-}" == "--first-address" ]]; then FIRST=${2:?--first-address needs a number}; shift 2; fi
  if [[ "${1:-}" == "--node" ]]; then i=${2:?--node needs a number}; shift 2; fi
  [[ "$i" =~ ^[1-9]$ ]] || die "--node must be 1..9"
  [[ -f "$LIB/.resolved-$CASSANDRA_VERSION" ]] || die "no classpath yet: run '$0 start' first"
  local -a jpms
  mapfile -t jpms < <(jvm_flags 1 "$i" 64M | grep -E -A1 -- '^--add-(exports|opens)$' | grep -v -- '^--$')
  printf '%s\n' '<configuration><root level="WARN"/></configuration>' >"$HOME_DIR/logback-tools.xml"
  exec "$JAVA" -Xmx128M "${jpms[@]}" "-Dlogback.configurationFile=file://$HOME_DIR/logback-tools.xml" -cp "$LIB/*" org.apache.cassandra.tools.NodeTool -h 127.0.0.1 -p "$(jmx_port "$i")" "$@"
}

main() {
  local cmd=${1:-}
  shift || true
  case "$cmd" in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    status) cmd_status ;;
    run) cmd_run "$@" ;;
    clean) cmd_clean ;;
    nodetool) cmd_nodetool "$@" ;;
    *) sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; [[ -z "$cmd" ]] && exit 1 || exit 2 ;;
  esac
}

main "$@"
