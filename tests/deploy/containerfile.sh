#!/bin/sh
# deploy/Containerfile's runtime stage installs the Debian package of every
# shared library the built binaries link directly (readelf NEEDED, mapped
# with dpkg -S), except libc6, which the base image has (and the
# sanitizer runtimes of a GQ_SANITIZE build); the stage runs as
# a numeric non-root user. Usage: containerfile.sh BINARY...
# (Building the image itself needs a container engine, not here.)
cd "$(dirname "$0")/../.." || exit 2
cf=deploy/Containerfile
runtime=$(sed -n '/^FROM .*bookworm-slim/,$p' "$cf")
[ -n "$runtime" ] || { echo "no bookworm-slim runtime stage in $cf"; exit 1; }
echo "$runtime" | grep -Eq '^USER [1-9][0-9]*:[1-9][0-9]*$' ||
  { echo "$cf: runtime stage has no numeric non-root USER"; exit 1; }
bad=0
for bin in "$@"; do
  for lib in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')
    [ -n "$path" ] || { echo "$bin: $lib not found by ldconfig"; bad=1; continue; }
    pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$pkg" ] || pkg=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1)
    case "$pkg" in
      libc6) continue ;;
      libasan*|libubsan*) continue ;; # the sanitizer build's, not the image's
      "") echo "$bin: no Debian package owns $path"; bad=1; continue ;;
    esac
    echo "$runtime" | grep -qw -- "$pkg" ||
      { echo "$bin needs $lib from $pkg, which $cf does not install"; bad=1; }
  done
done
[ $bad -eq 0 ] && echo "Containerfile runtime covers: $*"
exit $bad
