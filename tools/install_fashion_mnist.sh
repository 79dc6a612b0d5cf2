#!/bin/sh
# Real data for the offline reproduction: Debian's package dataset-fashion-mnist puts the Fashion-MNIST
# IDX files in /usr/share/datasets/fashion-mnist, where tf_fftconv.experiments.data looks. Installs it
# with apt-get where apt is there and allowed (root, or sudo without a password), otherwise says how.
# Always exits 0: without the data the reproduction still runs (on announced stand-in data).
PACKAGE=dataset-fashion-mnist
DIR=${TF_FFTCONV_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

if [ -d "$DIR" ]; then
    echo "setup: Fashion-MNIST is in $DIR"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: no apt-get here, so Fashion-MNIST is not installed. Get its four IDX files (Debian's" \
         "package $PACKAGE, or the Fashion-MNIST release) and run the reproduction with" \
         "--dataset idx:DIR, or set TF_FFTCONV_FASHION_MNIST_DIR=DIR."
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    sudo=
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
else
    echo "setup: installing $PACKAGE needs root; run \`sudo apt-get install $PACKAGE\` for real" \
         "offline data (Fashion-MNIST in $DIR)."
    exit 0
fi
echo "setup: installing Debian's $PACKAGE (Fashion-MNIST, for the offline reproduction)"
# A fresh machine may have no package lists yet: update them once when the first try fails.
if $sudo apt-get install -y -q "$PACKAGE" >/dev/null 2>&1 \
   || { $sudo apt-get update -q >/dev/null 2>&1 && $sudo apt-get install -y -q "$PACKAGE" >/dev/null 2>&1; }; then
    echo "setup: Fashion-MNIST is in $DIR"
else
    echo "setup: apt-get could not install $PACKAGE; install it by hand for real offline data," \
         "or run the reproduction with --dataset idx:DIR."
fi
exit 0
