#!/usr/bin/env bash
# Overhead of yaoki proxy, side by side with nginx proxy_pass and a plain
# httputil.ReverseProxy (bench/proxy/plainproxy), in one run: wrk with 64
# connections (2 threads) sends GETs through each proxy to the same trivial
# upstream (nginx answering "ok"), and once to the upstream directly, for
# the latency the proxies add. Everything listens on 127.0.0.1 only.
#
# usage: bench/proxy/run.sh [SECONDS] [ROUNDS]
#   SECONDS  length of each measurement, 1 to 30 (default 10)
#   ROUNDS   measurements of each target, interleaved, 1 to 5 (default 3);
#            the table gives each target's median round
#
# Needs go, wrk and nginx (Debian: apt-get install wrk nginx-light).
set -euo pipefail
cd "$(dirname "$0")/../.."

secs=${1:-10}
rounds=${2:-3}
if ! [[ $secs =~ ^[0-9]+$ ]] || ((secs < 1 || secs > 30)); then
	echo "run.sh: SECONDS $secs: want 1 to 30" >&2
	exit 2
fi
if ! [[ $rounds =~ ^[0-9]+$ ]] || ((rounds < 1 || rounds > 5)); then
	echo "run.sh: ROUNDS $rounds: want 1 to 5" >&2
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
	[ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

go build -o "$dir/yaoki" ./cmd/yaoki
go build -o "$dir/plainproxy" ./bench/proxy/plainproxy

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
up_port=$(free_port)
ngx_port=$(free_port)

# One nginx: the upstream (server 1) and the nginx proxy (server 2), which
# keeps idle connections to the upstream as the Go proxies do.
cat >"$dir/nginx.conf" <<EOF
daemon on;
worker_processes auto;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $dir; proxy_temp_path $dir; fastcgi_temp_path $dir; uwsgi_temp_path $dir; scgi_temp_path $dir;
	upstream up { server 127.0.0.1:$up_port; keepalive 128; }
	server { listen 127.0.0.1:$up_port; keepalive_requests 100000; location / { return 200 "ok\n"; } }
	server {
		listen 127.0.0.1:$ngx_port; keepalive_requests 100000;
		location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; }
	}
}
EOF
"$nginx" -c "$dir/nginx.conf" -p "$dir" -e "$dir/error.log"

# start NAME CMD...: runs a proxy that prints its URL on stdout.
start() {
	local name=$1
	shift
	"$@" >"$dir/$name.out" 2>"$dir/$name.err" &
	pids+=($!)
	for _ in $(seq 100); do
		[ -s "$dir/$name.out" ] && break
		sleep 0.05
	done
	head -1 "$dir/$name.out"
}
upstream=http://127.0.0.1:$up_port
plain=$(start plain "$dir/plainproxy" --upstream "$upstream")
yaoki=$(start yaoki "$dir/yaoki" proxy --listen 127.0.0.1:0 --upstream "$upstream")
yaokim=$(start yaokim "$dir/yaoki" proxy --listen 127.0.0.1:0 --upstream "$upstream" --admin-addr 127.0.0.1:0)

declare -A url=(
	[upstream]=$upstream/
	[nginx]=http://127.0.0.1:$ngx_port/
	[plain]=$plain
	[yaoki]=$yaoki
	[yaoki+metrics]=$yaokim
)
targets=(upstream nginx plain yaoki yaoki+metrics)
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

echo "wrk -t2 -c64 -d${secs}s --latency, $rounds rounds, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$rounds"); do
	for t in "${targets[@]}"; do
		wrk -t2 -c64 -d1s "${url[$t]}" >/dev/null # warm the connections
		out=$(wrk -t2 -c64 -d"${secs}s" --latency "${url[$t]}")
		rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		p99=$(to_us "$(awk '$1 == "99%" {print $2}' <<<"$out")")
		errors=$(awk '/Non-2xx|Socket errors/' <<<"$out")
		[ -z "$errors" ] || echo "run.sh: $t round $r: $errors" >&2
		echo "$t $r $rps $p99" >>"$dir/results"
		echo "  round $r $t: $rps req/s, p99 ${p99} µs" >&2
	done
done

# The median round of each target (by throughput), then the table.
for t in "${targets[@]}"; do
	awk -v t="$t" '$1 == t' "$dir/results" | sort -k3,3n | awk -v n="$rounds" 'NR == int((n + 1) / 2)'
done >"$dir/median"
awk '
	{ rps[$1] = $3; p99[$1] = $4 }
	END {
		printf "| proxy | requests/s | p99 latency | p99 added | throughput vs plain Go | vs nginx |\n"
		printf "|---|---:|---:|---:|---:|---:|\n"
		printf "| none (upstream directly) | %.0f | %.2f ms | | | |\n", rps["upstream"], p99["upstream"] / 1000
		n = split("nginx plain yaoki yaoki+metrics", order, " ")
		name["nginx"] = "nginx proxy_pass"; name["plain"] = "httputil.ReverseProxy"
		name["yaoki"] = "yaoki proxy"; name["yaoki+metrics"] = "yaoki proxy --admin-addr (metrics)"
		for (i = 1; i <= n; i++) {
			t = order[i]
			printf "| %s | %.0f | %.2f ms | %.2f ms | %.2f× | %.2f× |\n", name[t], rps[t], p99[t] / 1000,
				(p99[t] - p99["upstream"]) / 1000, rps[t] / rps["plain"], rps[t] / rps["nginx"]
		}
	}' "$dir/median"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
