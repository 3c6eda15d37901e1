#!/usr/bin/env bash
# Vendor the charting library (Vega, Vega-Lite, vega-embed and Vega's CSP-safe expression
# interpreter) from the npm registry into static/vendor/: the pages load it from this
# site, never from a CDN, so the charts work offline and under `script-src 'self'`.
#
# Usage: scripts/vendor_charts.sh            (re-vendor the pinned versions below)
#        VEGA=6.x VEGA_LITE=6.x ... scripts/vendor_charts.sh   (bump; then commit)
# vega-embed's bundle also carries a copy of vega-interpreter (used when `ast: true`); the
# pages pass the vendored one explicitly (static/js/charts.js).
# Writes static/vendor/<package>.min.js (vega-interpreter.js), its LICENSE as static/vendor/<package>.LICENSE
# and static/vendor/charts-manifest.json (versions; sha256 of each tarball, of the file in it
# and of the vendored file, which differs only by its dropped sourceMappingURL comment).
set -euo pipefail

VEGA=${VEGA:-6.4.0}
VEGA_LITE=${VEGA_LITE:-6.5.0}
VEGA_EMBED=${VEGA_EMBED:-7.3.0}
VEGA_INTERPRETER=${VEGA_INTERPRETER:-2.3.2}

root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/static/vendor"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dest"

manifest="$work/manifest.tsv"
: >"$manifest"
for spec in "vega@$VEGA:build/vega.min.js" "vega-lite@$VEGA_LITE:build/vega-lite.min.js" \
            "vega-embed@$VEGA_EMBED:build/vega-embed.min.js" \
            "vega-interpreter@$VEGA_INTERPRETER:build/vega-interpreter.js"; do
  package=${spec%%@*}
  upstream=""
  rest=${spec#*@}
  version=${rest%%:*}
  file=${rest#*:}
  (cd "$work" && npm pack --silent "$package@$version" >"$package.name")
  tarball="$work/$(cat "$work/$package.name")"
  mkdir -p "$work/$package"
  tar -xzf "$tarball" -C "$work/$package"
  if [ "$package" = vega-interpreter ]; then
    # vega-interpreter ships only an ES module that imports vega-util; vega's own bundle
    # exports all of vega-util, so wrap it as a classic script reading the `vega` global
    # and exposing `vegaInterpreter.expressionInterpreter` (no import map: that would be
    # an inline script, which the CSP forbids).
    src="$work/$package/package/$file"
    grep -q "^import {[^}]*} from 'vega-util';$" "$src"
    grep -q "^export { expression as expressionInterpreter };$" "$src"
    {
      printf '/* vega-interpreter %s (npm), wrapped as a classic script by scripts/vendor_charts.sh */\n' "$version"
      printf '(function (vega) {\n"use strict";\n'
      sed -e "s/^import {\([^}]*\)} from 'vega-util';$/const {\1} = vega;/" \
          -e "s/^export { expression as expressionInterpreter };$/globalThis.vegaInterpreter = { expressionInterpreter: expression };/" \
          -e "/^\/\/# sourceMappingURL=/d" "$src"
      printf '})(globalThis.vega);\n'
    } >"$dest/$package.js"
    out="$package.js"
  else
    # without its `//# sourceMappingURL=` comment: the map is not shipped, and the
    # production static storage (whitenoise's manifest) refuses a reference to a missing file
    sed -e 's|^//# sourceMappingURL=.*$||' "$work/$package/package/$file" >"$dest/$package.min.js"
    out="$package.min.js"
  fi
  upstream=$(sha256sum "$work/$package/package/$file" | cut -d' ' -f1)
  license=$(ls "$work/$package/package/" | grep -i '^licen[cs]e' | head -n 1)
  cp "$work/$package/package/$license" "$dest/$package.LICENSE"
  sha=$(sha256sum "$dest/$out" | cut -d' ' -f1)
  tgz=$(sha256sum "$tarball" | cut -d' ' -f1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$package" "$version" "$file" "$out" "$sha" "$tgz" "${upstream:-}" >>"$manifest"
done

python3 - "$manifest" "$dest/charts-manifest.json" <<'PY'
import json, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
packages = {name: {"version": version, "source": f"npm:{name}@{version}/{path}",
                   "file": out, "sha256": sha, "tarball_sha256": tgz,
                   "upstream_sha256": upstream or None}
            for name, version, path, out, sha, tgz, upstream in rows}
with open(sys.argv[2], "w") as out:
    json.dump({"vendored_by": "scripts/vendor_charts.sh", "packages": packages}, out, indent=2)
    out.write("\n")
PY
echo "vendored into $dest:"
ls -l "$dest"
