# Sourced by the device-side scripts (gpu_check.sh, run_bench.sh) from the
# folder they were copied to: work there, logs to $OUT, else to out/ at the top
# of the git work tree holding the folder (ignored there), else to ./out; our
# kernel library and the shared libraries the image may lack from the folder.
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
cd "$here" || exit 1
top=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null) || top=$here
out=${OUT:-$top/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export HC_KERNELS_LIB=$here/build/libhc_kernels.so
