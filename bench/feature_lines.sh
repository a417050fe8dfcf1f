#!/usr/bin/env bash
# Issue 49's line count on the package it was filed against (26,637 lines at b6b23ae): the package
# at REV less the lines of issues 50-53 (filed after it), counted three ways. Usage:
#   bash bench/feature_lines.sh [REV]
set -euo pipefail
cd "$(dirname "$0")/.."
REV=${1:-HEAD}
# the commits of issues 50-53 (lecture hall and hostile round 4, classes, watch it write, why)
FEATURES="c5d3915 8bb2aee e374d41 b6c601e 1a8df36 2d18d68 9363a55 ada98d0 1b70662 a0ffaf1 eee200d
a715e6f 6ceef5e a0dd64c 8bda435 ac5b825 85b1411 793bc53 c4a5889 352e72c 48af145 658c2dc 81a3287
f963fef 266d94d 264fbda 9981661 dc8f880 ce5ec81 afc888f 9ec4da6 bee2120 feabe30"
# the files only they made
ONLY='^attnviz/(classes|generation)/|^attnviz/app/sections/(class_[a-z]+|classroom|head_card|why|write)\.py$|^attnviz/views/(generation|why)\.py$|^attnviz/explain/(composition|residual_parts|sources)\.py$|^attnviz/app/server/classes\.py$'
files=$(git ls-tree -r --name-only "$REV" attnviz | grep '\.py$')
total=$(for f in $files; do git show "$REV:$f"; done | wc -l)
landed_only=0; landed_shared=0
for c in $FEATURES; do
  while read -r add del path; do
    [ "$add" = "-" ] && continue
    if [[ $path =~ $ONLY ]]; then landed_only=$((landed_only + add - del)); else landed_shared=$((landed_shared + add - del)); fi
  done < <(git show --no-renames --numstat --format= "$c" -- 'attnviz/*.py')
done
only_now=0; blamed=0
for f in $files; do
  if [[ $f =~ $ONLY ]]; then only_now=$((only_now + $(git show "$REV:$f" | wc -l))); continue; fi
  n=$(git blame -w -M -C --line-porcelain "$REV" -- "$f" | awk -v want="$FEATURES" '
    BEGIN { split(want, w); for (i in w) keep[w[i]] = 1 }
    /^[0-9a-f]{40} / { c = substr($1, 1, 7) } /^\t/ { if (c in keep) n++ } END { print n + 0 }')
  blamed=$((blamed + n))
done
python3 - "$total" "$landed_only" "$landed_shared" "$only_now" "$blamed" <<'PY'
import sys
total, landed_only, landed_shared, only_now, blamed = map(int, sys.argv[1:])
base = 26637
print(f"package {total:,}; at filing {base:,}; 10 % under it {int(base * 0.9):,}")
for name, feat in (("as landed", landed_only + landed_shared),
                   ("their files now + shared as landed", only_now + landed_shared),
                   ("their files now + shared by blame", only_now + blamed)):
    print(f"{name:36s} features {feat:6,}  without them {total - feat:7,}  {(total - feat) / base - 1:+.2%}")
PY
