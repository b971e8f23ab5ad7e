#!/usr/bin/env bash
# bench/serve_load.sh — `jepa serve` under load: wrk (Debian's `wrk`) with C connections
# for D seconds against POST /v1/embeddings, each configuration a fresh server, run back
# to back on the same machine: --max-batch 1 (every request its own forward) against
# --max-batch 8 (dynamic batching). Two models: the tiny V-JEPA 2 test fixture with a
# float32 tensor input (what the server itself costs per request), and a random-weight
# LeJEPA ViT-S/16 at 224² with a PNG input (decoding, preprocessing and a real encoder).
#
#   bash bench/serve_load.sh [BUILD_DIR] [CONNECTIONS] [SECONDS]
#
# Prints a markdown table: requests/s, latency p50 / p99, non-2xx answers, and the ratio
# of the batched configuration to the unbatched one.
set -eu
build=${1:-build}
conns=${2:-8}
secs=${3:-10}
jepa=$build/cli/jepa
work=${JEPA_BENCH_MODELS:-/tmp/jepa-bench-models}
mkdir -p "$work"
command -v wrk >/dev/null || { echo "bench/serve_load.sh: needs wrk (apt-get install wrk)" >&2; exit 1; }
"$jepa" serve --help >/dev/null 2>&1 || { echo "bench/serve_load.sh: $jepa has no server" >&2; exit 1; }
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tests/server/serve_port.sh"
[ -f "$work/lejepa-vits16-f16.gguf" ] ||
    "$jepa" synth --arch lejepa-vits16-224 --dtype f16 -o "$work/lejepa-vits16-f16.gguf" >/dev/null
python3 - "$here/tests/data/vjepa2_tiny/input.npy" "$here/tests/input/data/e2e.png" "$work" <<'PY'
import base64, json, struct, sys
npy, png, work = sys.argv[1:4]
raw = open(npy, "rb").read()
hl = struct.unpack("<H", raw[8:10])[0]
hdr = eval(raw[10:10 + hl].decode("latin1"), {"__builtins__": {}}, {"True": True, "False": False})
t = {"input": [{"tensor": base64.b64encode(raw[10 + hl:]).decode(), "shape": list(hdr["shape"])}],
     "encoding_format": "base64"}
open(work + "/serve_tensor.json", "w").write(json.dumps(t))
i = {"input": ["data:image/png;base64," + base64.b64encode(open(png, "rb").read()).decode()], "pool": "mean"}
open(work + "/serve_png.json", "w").write(json.dumps(i))
PY
cat >"$work/serve_post.lua" <<'LUA'
wrk.method = "POST"
local f = io.open(os.getenv("JEPA_BODY"), "r")
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
LUA
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores; wrk -c $conns -d ${secs}s"
echo
echo "| model, input | --max-batch | requests/s | p50 ms | p99 ms | non-2xx | batched / unbatched |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for case in "vjepa2-tiny, tensor|$here/tests/data/vjepa2_tiny/model.gguf|serve_tensor.json" \
            "LeJEPA ViT-S/16 f16, PNG|$work/lejepa-vits16-f16.gguf|serve_png.json"; do
    IFS='|' read -r name model body <<<"$case"
    base=
    for mb in 1 8; do
        "$jepa" serve -m "$model" --port 0 -q --max-batch $mb --batch-wait-ms 5 --queue 256 2>"$work/serve.log" &
        pid=$!
        port=$(serve_port "$work/serve.log")
        [ -n "$port" ] || { echo "bench/serve_load.sh: the server did not start" >&2; cat "$work/serve.log" >&2; exit 1; }
        out=$(JEPA_BODY="$work/$body" wrk -t2 -c"$conns" -d"${secs}s" -s "$work/serve_post.lua" --latency \
              "http://127.0.0.1:$port/v1/embeddings")
        kill -TERM $pid
        wait $pid || true
        rps=$(sed -n 's/^Requests\/sec: *//p' <<<"$out")
        p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
        p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
        non2xx=$(sed -n 's/^ *Non-2xx or 3xx responses: *//p' <<<"$out")
        ratio=
        if [ -z "$base" ]; then base=$rps; else ratio=$(awk -v a="$rps" -v b="$base" 'BEGIN {printf "%.2fx", a / b}'); fi
        echo "| $name | $mb | $rps | $p50 | $p99 | ${non2xx:-0} | $ratio |"
    done
done
