#!/bin/sh
# Fails if C sources call functions the house style bans (STYLE.md, as
# curl's checksrc does): unbounded copies and formats, strtok's hidden state,
# and atoi's silent failure. Use snprintf, strtok_r, strtol/strtoll instead.
cd "$(dirname "$0")/../.." || exit 2
hits=$(git ls-files -co --exclude-standard -- '*.c' '*.h' 2>/dev/null |
  xargs grep -nE '(^|[^_a-zA-Z0-9])(strcpy|strcat|sprintf|vsprintf|strtok|atoi|atol|gets)[[:space:]]*\(' 2>/dev/null)
if [ -n "$hits" ]; then
  echo "banned calls found:"
  echo "$hits"
  exit 1
fi
echo "no banned calls"
