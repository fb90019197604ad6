#!/usr/bin/env bash
# The `rules` curve of docs/quality.md on the embedded model, then Formula and FiNER at batch 32:
# both `rules` variants (`rules`, whose
# feedback states the rule, and `rules-unstated`, whose feedback gives the verdict and the
# reference answer only), ACE's repairs all on and all off, the cells in the order the docs need
# them. Every cell shares one response cache, so a cell replays the calls another made with the
# same prompt, and rerunning the script skips finished cells and replays cached calls: it
# continues where it stopped.
#
#   benchmarks/rules_curve.sh [OUT]           # OUT defaults to runs/rules-curve
#
# Start from the committed cache to replay the measured cells in seconds:
#   mkdir -p runs/rules-curve && cp benchmarks/caches/rules-curve-48.sqlite runs/rules-curve/cache.sqlite
# After each group, benchmarks/rules_losses.py replays every finished cell from the cache and
# writes where each rule was lost to OUT/<variant>-repairs-<on|off>/losses-<cell>.json.
set -euo pipefail
mkdir -p "${1:-runs/rules-curve}"
out=$(cd "${1:-runs/rules-curve}" && pwd)
combee=${COMBEE:-combee}
python=${PYTHON:-python}
here=$(cd "$(dirname "$0")" && pwd)
cache=$out/cache.sqlite
# The grid measures aggregation: no screen and no outcome gate, in every cell.
printf 'screen = false\ngate = false\n' >"$out/repairs-on.toml"
printf 'screen = false\ngate = false\ncopy_rules = false\ndrop_contradictions = false\noverrule_drops = false\n' \
  >"$out/repairs-off.toml"

# One group of cells: variant, repairs (on|off), context window, strategies, batch sizes, seeds.
group() {
  local variant=$1 repairs=$2 window=$3 strategies=$4 sizes=$5 seeds=$6
  local dir=$out/$variant-repairs-$repairs
  [ "$window" = 8192 ] && dir=$dir-8k
  "$combee" compare --task "$variant" --train-limit 32 --val-limit 0 --test-limit 16 --baseline \
    --max-tokens 1024 --context-window "$window" --spec "$out/repairs-$repairs.toml" \
    --cache "$cache" --out "$dir" --strategies "$strategies" --batch-sizes "$sizes" \
    --seeds "$seeds" --no-report
  for strategy in ${strategies//,/ }; do
    for size in ${sizes//,/ }; do
      for seed in ${seeds//,/ }; do
        local json=$dir/losses-$strategy-b$size-s$seed.json
        [ -f "$json" ] && continue
        PYTHONPATH=$here "$python" "$here/rules_losses.py" --task "$variant" \
          --repairs "$repairs" --strategy "$strategy" --batch "$size" --seed "$seed" \
          --context-window "$window" --cache "$cache" --json "$json" >/dev/null || true
      done
    done
  done
}

fits=32768
# What the issue's must-show needs first: combee against naive with a context that fits, repairs
# off, on both variants; then the same with repairs on.
for repairs in off on; do
  for variant in rules rules-unstated; do
    group "$variant" "$repairs" $fits combee,naive 32 0
  done
done
# Naive at the embedded model's default 8k context (its one call does not fit: labelled so).
group rules off 8192 naive 32 0
# Seed 1 of the first cells.
for repairs in off on; do
  for variant in rules rules-unstated; do
    group "$variant" "$repairs" $fits combee,naive 32 1
  done
done
# The other strategies at 32, then batch 16, both seeds.
for variant in rules rules-unstated; do
  for repairs in off on; do
    group "$variant" "$repairs" $fits combee-sqrt,topk,hier-summarize 32 0,1
    group "$variant" "$repairs" $fits naive,combee,combee-sqrt,topk,hier-summarize 16 0,1
    group "$variant" "$repairs" $fits sequential 1 0,1
  done
done
# Formula and FiNER at batch 32 with the defaults (their feedback is a verdict: nothing to copy).
for task in formula finer; do
  for strategies in naive,combee sequential; do
    size=32
    [ "$strategies" = sequential ] && size=1
    "$combee" compare --task "$task" --train-limit 32 --val-limit 0 --test-limit 16 --baseline \
      --max-tokens 1024 --context-window $fits --no-gate --cache "$cache" --out "$out/$task" \
      --strategies "$strategies" --batch-sizes "$size" --seeds 0 --no-report
  done
done
