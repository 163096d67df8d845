#!/bin/sh
# Fails if an #include crosses a layer boundary (issue 19, DESIGN §3):
#   1. decide/ links gq_base only: its files may include "decide/..." and
#      "base/..." and system headers, but no other quoted path (api/,
#      queue/, controller/, or anything relative such as "../api/pod.h")
#      and not jansson, libuv, hiredis, curl, libmicrohttpd, libyaml or
#      cmocka headers. The build enforces most of this by include roots
#      (decide/CMakeLists.txt); this check also catches relative paths,
#      which bypass include roots.
#   2. gpuq-sim uses Kubernetes' matching rules and the typed model from
#      decide/, never gpuq's placement and quota policy (the test bed must
#      not share the controller's mistakes): sim/ may not include
#      decide/{snapshot,place,assign,forecast,preempt,position,quota}.h,
#      nor anything under controller/.
# Run by ctest (lint_layers) and before gq_decide is compiled.
cd "$(dirname "$0")/../.." || exit 2
fail=0

# Every #include line of the files under $1, as file:line:text.
includes() {
  find "$1" -type f \( -name '*.c' -o -name '*.h' \) -exec \
    grep -nHE '^[[:space:]]*#[[:space:]]*include' {} + 2>/dev/null
}

bad=$(includes decide | grep -vE \
  ':[[:space:]]*#[[:space:]]*include[[:space:]]*("(decide|base)/[A-Za-z0-9_]+\.h"|<[^>]+>)' )
lib=$(includes decide | grep -E \
  '#[[:space:]]*include[[:space:]]*<[[:space:]]*(jansson|uv|hiredis|curl|microhttpd|yaml|cmocka)([./][^>]*)?>')
if [ -n "$bad$lib" ]; then
  echo "decide/ may include only \"decide/...\", \"base/...\" and libc headers:"
  printf '%s\n' "$bad" "$lib" | sed '/^$/d'
  fail=1
fi

sim=$(includes sim | grep -E \
  '#[[:space:]]*include[[:space:]]*"(\.\./)*(controller/|decide/(snapshot|place|assign|forecast|preempt|position|quota)\.h)')
if [ -n "$sim" ]; then
  echo "sim/ may not use gpuq's policy (decide/ policy headers, controller/):"
  printf '%s\n' "$sim"
  fail=1
fi

[ "$fail" -eq 0 ] && echo "layers: decide/ and sim/ includes are clean"
exit "$fail"
