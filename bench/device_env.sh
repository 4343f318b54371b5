# Sourced by the device-side scripts (gpu_check.sh, run_bench.sh) from the
# folder they were copied to: work there, logs to $OUT (or ./out), and our
# kernel library and the shared libraries the image may lack from it.
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
cd "$here" || exit 1
out=${OUT:-$here/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export HC_KERNELS_LIB=$here/build/libhc_kernels.so
