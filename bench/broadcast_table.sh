#!/usr/bin/env bash
# Runs a broadcast scenario once per algorithm x radix choice and prints a
# Markdown table: simulated finish time, the pipelined lower bound of that
# plan, and the speed-up over naive 1-to-n. Usage:
#   bench/broadcast_table.sh [SCENARIO] [TENSORWIRE]
# (defaults: scenarios/broadcast_8x4.toml, build/apps/tensorwire/tensorwire)
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-scenarios/broadcast_8x4.toml}
tensorwire=${2:-build/apps/tensorwire/tensorwire}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

variant() {  # name algorithm radix_inter radix_intra
  grep -v -E '^(algorithm|radix_inter|radix_intra) *=' "$scenario" > "$work/$1.toml"
  printf 'algorithm = %s\nradix_inter = %s\nradix_intra = %s\n' "$2" "$3" "$4" >> "$work/$1.toml"
  "$tensorwire" run "$work/$1.toml" --timing-only --json "$work/$1.json" > /dev/null
}

variant naive 0 2 2
variant aggregation 1 2 2
for inter in 1 2 3 4 8; do
  for intra in 0 1 2 3; do variant "radix_${inter}_${intra}" 2 "$inter" "$intra"; done
done

python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
def load(name):
    with open(os.path.join(work, name + ".json")) as f:
        return json.load(f)
naive = load("naive")["finish_ns"]
rows = [("naive", "naive 1-to-n", "-", "-"), ("aggregation", "1-to-n aggregation", "-", "-")]
for inter in (1, 2, 3, 4, 8):
    for intra in (0, 1, 2, 3):
        rows.append((f"radix_{inter}_{intra}", "radix tree", str(inter), str(intra)))
print("| algorithm | radix_inter | radix_intra | depth | finished | lower bound | vs bound | faster than naive |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for name, algo, inter, intra in rows:
    j = load(name)
    assert j["passed"], name
    f, b = j["finish_ns"], j["lower_bound"]["total_ns"]
    print(f"| {algo} | {inter} | {intra} | {j['plan']['depth']} | {f/1e6:.1f} ms | {b/1e6:.1f} ms | "
          f"{f/b:.2f}x | {naive/f:.1f}x |")
PY
