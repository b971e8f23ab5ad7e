#!/usr/bin/env bash
# bench/gpu_bundle.sh BUILD_DIR [DEST] — copy what bench/gpu.sh runs out of a CUDA build
# into DEST (default gpu-bundle, git-ignored), with the shared libraries they need that a
# bare GPU machine may lack (libgomp, libstdc++, ...; glibc's own libraries stay out), so
# that the folder can be carried to a machine with a GPU and run there without a
# toolchain:
#
#   meson setup build-gpu -Dcuda=enabled -Dopenblas=disabled -Dvideo=disabled
#   ninja -C build-gpu && bash bench/gpu_bundle.sh build-gpu
#   JEPA_GPU_BUILD=gpu-bundle bash bench/gpu.sh OUT_DIR        (on the GPU machine)
#
# cudart is linked statically into every binary: the GPU machine needs only the driver.
set -eu
build=${1:?usage: gpu_bundle.sh BUILD_DIR [DEST]}
dest=${2:-gpu-bundle}
bins="cli/jepa tests/models/npy_compare tests/cuda/test_cuda_device_gpu tests/cuda/test_cuda_ops_gpu
tests/cuda/test_cuda_gemm_gpu tests/cuda/test_cuda_attn_gpu tests/cuda/test_gpu_parity_gpu"
rm -rf "$dest"
mkdir -p "$dest/lib"
for b in $bins; do
    [ -x "$build/$b" ] || { echo "gpu_bundle.sh: $build/$b not built (a CUDA build?)" >&2; exit 1; }
    mkdir -p "$dest/$(dirname "$b")"
    cp "$build/$b" "$dest/$b"
    ldd "$build/$b" | awk '/=> \// {print $3}' | while read -r lib; do
        case $(basename "$lib") in
            libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libcuda.so*) ;;
            *) cp -n "$lib" "$dest/lib/" ;;
        esac
    done
done
du -sh "$dest"
