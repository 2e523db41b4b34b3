#!/usr/bin/env bash
# Fetches the pinned, digest-checked test inputs of ../shared/FIXTURES.md into .fixtures/
# (ignored by git). Each package is fetched once; a digest mismatch stops the run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${REA_FIXTURES:-$root/.fixtures}"
mkdir -p "$dest/npm" "$dest/pypi"

# name@version  sha256-of-tarball  folder
npm_pins=(
  "fsevents@2.3.3 c77e7a5d5ff31dd7acea7c44d4a0455e0528cdacbd24a8cb6c82b66d239b587e fsevents"
  "7zip-bin@5.2.0 04f9738ee00be8be53f5d06254a9e6e4b5117b17f8b74058477d870e62764a7d 7zip-bin-5.2.0"
  "7zip-bin@5.1.1 bbb23b08abc09ebf5ecd2c0f0973e4b529524d29fb130be1f76997784c770db6 7zip-bin-5.1.1"
  "node-notifier@10.0.1 5e75d1bb41696f3334481ec083204335e519920d292855cb6afb6b0e2d9afe9b node-notifier"
  "nativefier@52.0.0 483c4fc8e941d5f870c610150f61835ff92ee313688bd3262cf3dca6fb910876 nativefier"
  "@quick-start/create-electron@1.0.30 56f431f8ec2ff19a689b560a20429b7423a3d2cdc9fce3a4581fb3804c7f2b49 create-electron"
  "@electron/asar@3.4.1 c4e6ce52ade617c57913382f04512e9f4084dd2b3fde5f32639d8bcf42796102 asar"
  "@sentry/cli-darwin@3.8.0 711d8d61e448b2e8a10c217acbfe206db7456e0072f041136e3bf7935fdf5cfa sentry-cli-darwin"
  "@esbuild/darwin-arm64@0.25.0 1dc8475bb7938b2eb63c7e79a4a3bb2af0dca3e75bba62db87bb64a6340a79a5 esbuild-darwin-arm64"
)
pypi_pins=(
  "delocate==0.13.0 11f7596f88984c33f76b27fe2eea7637d1ce369a9e0b6737bbc706b6426e862c delocate"
  "py2app==0.28.10 bdb0cd2cbfa5160b5b11b8d612f6eb92d484a0282801e85b159f1930cd834714 py2app"
  "pip==24.0 ba0d021a166865d2265246961bec0152ff124de910c5cc39f1156ce3fa7c69dc pip"
)

check() { # file expected-sha256
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$got" != "$2" ]; then echo "fixture $1: sha256 $got, expected $2" >&2; exit 1; fi
}

for pin in "${npm_pins[@]}"; do
  read -r spec sum dir <<<"$pin"
  [ -f "$dest/$dir/.ok" ] && continue
  tgz=$(cd "$dest/npm" && npm pack --silent "$spec" | tail -n 1)
  check "$dest/npm/$tgz" "$sum"
  rm -rf "${dest:?}/$dir" && mkdir -p "$dest/$dir"
  tar xzf "$dest/npm/$tgz" -C "$dest/$dir"
  touch "$dest/$dir/.ok"
done

for pin in "${pypi_pins[@]}"; do
  read -r spec sum dir <<<"$pin"
  [ -f "$dest/$dir/.ok" ] && continue
  python3 -m pip download -q --no-deps "$spec" -d "$dest/pypi"
  whl=$(ls "$dest/pypi/${spec%%==*}"-"${spec##*==}"-*.whl)
  check "$whl" "$sum"
  rm -rf "${dest:?}/$dir" && mkdir -p "$dest/$dir"
  python3 -m zipfile -e "$whl" "$dest/$dir"
  touch "$dest/$dir/.ok"
done
echo "fixtures ready in $dest" >&2
