#!/usr/bin/env bash
# Installs the TypeScript examples one after the other: each builds the
# TypeScript runner SDK first, so they must not run side by side.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
bash runner-ts/install.sh
bash orders-openai-agents-ts/install.sh
