#!/usr/bin/env bash
# Overhead of yaoki proxy, side by side with nginx proxy_pass and a plain
# httputil.ReverseProxy (bench/proxy/plainproxy), in one run, with the floor
# of any Go proxy on this machine (bench/proxy/floorproxy: a Go program that
# only copies the bytes of a request and its answer): wrk with 64
# connections (2 threads) sends GETs through each proxy to the same trivial
# upstream (an nginx of its own, answering "ok"), and once to it directly, for
# the latency the proxies add; and the CPU time each proxy process uses per
# request, which other load on the machine disturbs less than throughput.
# Everything listens on 127.0.0.1 only.
#
# Two phases, a table each. Saturated: every connection sends its next
# request as soon as the answer is in, so throughput is each proxy's most,
# and its p99 is mostly the wait for a core. Paced: every connection waits
# PACE_MS between requests (64 connections: about 64000/(PACE_MS + the
# latency) requests/s offered, the same to every target, well below what
# any of them serves), so that the p99 added is the proxy's own latency.
#
# usage: bench/proxy/run.sh [SECONDS] [ROUNDS] [PACE_MS]
#   SECONDS  length of each measurement, 1 to 30 (default 5)
#   ROUNDS   measurements of each target, interleaved, 1 to 9 (default 5);
#            the table gives medians over the rounds
#   PACE_MS  the paced phase's wait per connection, 1 to 1000 ms (default
#            20: about 3000 requests/s); 0 skips the paced phase
#
# Needs go, wrk and nginx (Debian: apt-get install wrk nginx-light).
set -euo pipefail
cd "$(dirname "$0")/../.."

secs=${1:-5}
rounds=${2:-5}
pace=${3:-20}
if ! [[ $secs =~ ^[0-9]+$ ]] || ((secs < 1 || secs > 30)); then
	echo "run.sh: SECONDS $secs: want 1 to 30" >&2
	exit 2
fi
if ! [[ $rounds =~ ^[0-9]+$ ]] || ((rounds < 1 || rounds > 9)); then
	echo "run.sh: ROUNDS $rounds: want 1 to 9" >&2
	exit 2
fi
if ! [[ $pace =~ ^[0-9]+$ ]] || ((pace > 1000)); then
	echo "run.sh: PACE_MS $pace: want 0 (no paced phase) or 1 to 1000" >&2
	exit 2
fi
for bin in go wrk; do
	command -v "$bin" >/dev/null || { echo "run.sh: $bin is not installed" >&2; exit 1; }
done
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "run.sh: nginx is not installed" >&2; exit 1; }

dir=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for n in upstream proxy; do
		[ -f "$dir/$n/nginx.pid" ] && kill "$(cat "$dir/$n/nginx.pid")" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

go build -o "$dir/yaoki" ./cmd/yaoki
go build -o "$dir/plainproxy" ./bench/proxy/plainproxy
go build -o "$dir/floorproxy" ./bench/proxy/floorproxy

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
up_port=$(free_port)
ngx_port=$(free_port)

# Two nginx: the upstream (one worker), and the nginx proxy (a worker per
# core, as Go uses every core), which keeps idle connections to the
# upstream as the Go proxies do. Each proxy, nginx's too, is a process of
# its own between wrk and the upstream.
nginx_conf() { # NAME WORKERS HTTP-BLOCK-BODY
	mkdir -p "$dir/$1"
	cat >"$dir/$1/nginx.conf" <<EOF
daemon on;
worker_processes $2;
pid $dir/$1/nginx.pid;
error_log $dir/$1/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $dir/$1; proxy_temp_path $dir/$1; fastcgi_temp_path $dir/$1; uwsgi_temp_path $dir/$1; scgi_temp_path $dir/$1;
	$3
}
EOF
	"$nginx" -c "$dir/$1/nginx.conf" -p "$dir/$1" -e "$dir/$1/error.log"
}
nginx_conf upstream 1 "server { listen 127.0.0.1:$up_port; keepalive_requests 100000; location / { return 200 'ok\n'; } }"
nginx_conf proxy auto "upstream up { server 127.0.0.1:$up_port; keepalive 128; }
	server {
		listen 127.0.0.1:$ngx_port; keepalive_requests 100000;
		location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ''; }
	}"

# start NAME CMD...: runs a proxy that prints its URL on stdout, and
# notes its URL and process in url[NAME] and pid[NAME]. (Not in a
# subshell: cleanup must know the process.)
declare -A url pid
start() {
	local name=$1
	shift
	"$@" >"$dir/$name.out" 2>"$dir/$name.err" &
	pids+=($!)
	pid[$name]=$!
	for _ in $(seq 100); do
		[ -s "$dir/$name.out" ] && break
		sleep 0.05
	done
	url[$name]=$(head -1 "$dir/$name.out")
}
upstream=http://127.0.0.1:$up_port
start plain "$dir/plainproxy" --upstream "$upstream"
# yaoki proxy runs 3 Go threads per core (GOMAXPROCS), at most 8 beyond the
# cores, unless GOMAXPROCS is set; the floor runs the same way, so that it
# stays the floor of yaoki proxy; and one yaoki proxy runs at Go's default
# of one per core.
cores=$(nproc)
procs=$((cores + (2 * cores < 8 ? 2 * cores : 8)))
start floor env GOMAXPROCS=$procs "$dir/floorproxy" --upstream "$upstream"
start yaoki "$dir/yaoki" proxy --listen 127.0.0.1:0 --upstream "$upstream"
start yaoki+metrics "$dir/yaoki" proxy --listen 127.0.0.1:0 --upstream "$upstream" --admin-addr 127.0.0.1:0
# yaoki proxy collects garbage at GOGC=400 unless GOGC is set: this one
# runs at Go's default, for what that setting buys.
start yaoki+gogc100 env GOGC=100 "$dir/yaoki" proxy --listen 127.0.0.1:0 --upstream "$upstream"
start yaoki+cores env GOMAXPROCS="$cores" "$dir/yaoki" proxy --listen 127.0.0.1:0 --upstream "$upstream"
# And one on one thread.
start yaoki+procs1 env GOMAXPROCS=1 "$dir/yaoki" proxy --listen 127.0.0.1:0 --upstream "$upstream"
url[upstream]=$upstream/
url[nginx]=http://127.0.0.1:$ngx_port/
pid[upstream]=$(cat "$dir/upstream/nginx.pid")
pid[nginx]=$(cat "$dir/proxy/nginx.pid")

# cpu_ticks NAME: the CPU time (user + system, in clock ticks) that the
# process of NAME and its children (nginx's workers) have used so far.
cpu_ticks() {
	local p sum=0
	for p in ${pid[$1]} $(pgrep -P "${pid[$1]}" || true); do
		set -- $(sed 's/^.*) //' "/proc/$p/stat")
		sum=$((sum + ${12} + ${13}))
	done
	echo "$sum"
}
targets=(upstream nginx floor plain yaoki yaoki+metrics yaoki+gogc100 yaoki+cores yaoki+procs1)
for t in "${targets[@]}"; do
	[ "$(curl -s "${url[$t]}")" = ok ] || { echo "run.sh: $t (${url[$t]}) does not answer ok" >&2; exit 1; }
done

# to_us VALUE: wrk's latency (123.45us, 1.23ms, 1.02s) in microseconds.
to_us() {
	awk -v v="$1" 'BEGIN {
		if (v ~ /us$/) { sub(/us$/, "", v); print v + 0 }
		else if (v ~ /ms$/) { sub(/ms$/, "", v); print v * 1000 }
		else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1000000 }
	}'
}

# measure FILE [WRK-OPTION...]: every round, every target, one after the
# other: wrk with the options, a line "target round requests/s p99-µs
# cpu-µs-per-request" in FILE.
measure() {
	local file=$1 r t before out ticks rps n p99 errors cpu
	shift
	for r in $(seq "$rounds"); do
		for t in "${targets[@]}"; do
			wrk -t2 -c64 -d1s "${url[$t]}" >/dev/null # warm the connections
			before=$(cpu_ticks "$t")
			out=$(wrk -t2 -c64 -d"${secs}s" --latency "$@" "${url[$t]}")
			ticks=$(($(cpu_ticks "$t") - before))
			rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
			n=$(awk '/requests in/ {print $1}' <<<"$out")
			p99=$(to_us "$(awk '$1 == "99%" {print $2}' <<<"$out")")
			errors=$(awk '/Non-2xx|Socket errors/' <<<"$out")
			[ -z "$errors" ] || echo "run.sh: $t round $r: $errors" >&2
			cpu=$(awk -v t="$ticks" -v n="$n" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
			echo "$t $r $rps $p99 $cpu" >>"$file"
			echo "  round $r $t: $rps req/s, p99 ${p99} µs, ${cpu} µs of CPU per request" >&2
		done
	done
}

echo "saturated: wrk -t2 -c64 -d${secs}s --latency, $rounds rounds, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
measure "$dir/results"
if ((pace > 0)); then
	printf 'function delay()\n\treturn %d\nend\n' "$pace" >"$dir/paced.lua"
	echo "paced: the same with each connection waiting ${pace} ms between requests (wrk -s paced.lua, delay() = $pace)" >&2
	measure "$dir/paced" -s "$dir/paced.lua"
fi

# The table: each figure is the median over the rounds, and each ratio the
# median of the ratios within a round (the targets of a round are measured
# one after the other), which a burst of load elsewhere upsets less.
table() { # FILE
python3 - "$1" "$cores" "$procs" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}  # target -> round -> (rps, p99 µs)
for t, r, rps, p99, cpu in rows:
    by.setdefault(t, {})[r] = (float(rps), float(p99), float(cpu))
rounds = sorted(by["upstream"])
med = statistics.median
def ratio(t, base):
    return med(by[t][r][0] / by[base][r][0] for r in rounds)
def added(t):
    return med((by[t][r][1] - by["upstream"][r][1]) / 1000 for r in rounds)
print("| proxy | requests/s | p99 latency | p99 added | throughput vs plain Go | vs nginx | CPU per request | CPU vs plain Go |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
u = by["upstream"]
print(f"| none (upstream directly) | {med(u[r][0] for r in rounds):.0f} | {med(u[r][1] for r in rounds) / 1000:.2f} ms | | | |"
      f" {med(u[r][2] for r in rounds):.0f} µs (upstream) | |")
names = {"nginx": "nginx proxy_pass", "floor": "Go floor: bytes copied, no HTTP proxying (floorproxy), GOMAXPROCS=" + sys.argv[3], "plain": "httputil.ReverseProxy", "yaoki": "yaoki proxy",
         "yaoki+metrics": "yaoki proxy --admin-addr (metrics)", "yaoki+gogc100": "yaoki proxy, GOGC=100", "yaoki+cores": "yaoki proxy, GOMAXPROCS=" + sys.argv[2] + " (one per core)", "yaoki+procs1": "yaoki proxy, GOMAXPROCS=1"}
for t, name in names.items():
    v = by[t]
    cpu = med(v[r][2] for r in rounds)
    cpu_ratio = med(v[r][2] / by["plain"][r][2] for r in rounds)
    print(f"| {name} | {med(v[r][0] for r in rounds):.0f} | {med(v[r][1] for r in rounds) / 1000:.2f} ms | {added(t):.2f} ms"
          f" | {ratio(t, 'plain'):.2f}× | {ratio(t, 'nginx'):.2f}× | {cpu:.0f} µs | {cpu_ratio:.2f}× |")
EOF
}
echo "Saturated (64 connections, each sends its next request as soon as it has the answer):"
table "$dir/results"
if ((pace > 0)); then
	echo
	echo "Paced (64 connections, each waits $pace ms between requests; the throughput ratios say only that every target kept up):"
	table "$dir/paced"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
