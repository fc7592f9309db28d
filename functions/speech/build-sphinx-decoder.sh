#!/bin/sh
# Compiles the sphinx-decoder helper (sphinx-decoder.c beside this script) into the file $1, against
# Debian's PocketSphinx library (packages gcc, pkg-config, libpocketsphinx-dev; at run time the
# libpocketsphinx3 that the pocketsphinx package brings). Run by local/setup.mjs and the worker image build.
set -eu
gcc -O2 -Wall -Werror -o "$1" "$(dirname "$0")/sphinx-decoder.c" $(pkg-config --cflags --libs pocketsphinx)
