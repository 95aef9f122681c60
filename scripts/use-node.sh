#!/usr/bin/env bash
# Puts the Node.js that CI tests on PATH, so local work runs what CI runs.
#
#   source scripts/use-node.sh        # Node 24 LTS, the line CI runs the whole suite on
#   source scripts/use-node.sh 22     # the older supported LTS line
#   source scripts/use-node.sh 26     # the newest line
#   scripts/use-node.sh --bin 24      # print that Node's bin folder (for scripts and CI)
#
# When the machine's own `node` is already on that line it is used as is. Otherwise the official
# build is installed from the npm registry (the `node-<os>-<arch>` package, no install script) into
# ${HANGAR_NODE_CACHE:-~/.cache/hangar/node}/<version>, once, and its bin folder is put first on PATH.
# The versions below are the ones CI pins; bump them here and nowhere else.

hangar_node_version() {
  case "$1" in
    22) echo 22.23.3 ;;
    24 | '') echo 24.21.0 ;;
    26) echo 26.10.0 ;;
    *) return 1 ;;
  esac
}

hangar_node_bin() {
  local line="${1:-24}" version os arch cache pkg
  version="$(hangar_node_version "$line")" || {
    echo "use-node: unknown line '$line' (choose 22, 24 or 26)" >&2
    return 2
  }
  if command -v node >/dev/null 2>&1 && [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)" = "${version%%.*}" ]; then
    dirname "$(command -v node)"
    return 0
  fi
  case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) echo "use-node: unsupported OS $(uname -s)" >&2; return 1 ;; esac
  case "$(uname -m)" in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) echo "use-node: unsupported CPU $(uname -m)" >&2; return 1 ;; esac
  cache="${HANGAR_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hangar/node}/$version"
  pkg="node-$os-$arch"
  if [ ! -x "$cache/node_modules/$pkg/bin/node" ]; then
    echo "use-node: installing Node $version ($pkg from the npm registry) into $cache" >&2
    mkdir -p "$cache" &&
      npm install --prefix "$cache" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "$pkg@$version" >&2 || return 1
  fi
  echo "$cache/node_modules/$pkg/bin"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  # Executed, not sourced: only printing makes sense (a child cannot change its parent's PATH).
  if [ "${1:-}" = "--bin" ]; then
    hangar_node_bin "${2:-24}"
    exit $?
  fi
  echo "usage: source scripts/use-node.sh [22|24|26]   or   scripts/use-node.sh --bin [22|24|26]" >&2
  exit 2
fi

if hangar_node_dir="$(hangar_node_bin "${1:-24}")"; then
  export PATH="$hangar_node_dir:$PATH"
  hash -r
  echo "use-node: $(node --version) from $hangar_node_dir" >&2
fi
unset hangar_node_dir
