# Source this file (`. crates/dist/nccl-env.sh`) to make libnccl loadable by
# parprims-dist. cudarc opens `libnccl.so` (or `.so.13`, `.so.12`, ...), while
# NCCL's library is `libnccl.so.2`, the only name a pip-installed NCCL (the
# one PyTorch uses) ships. This finds libnccl.so.2 (the `nvidia.nccl` Python
# package, then PyTorch's lib folder, then the loader's cache), links it as
# libnccl.so in a private folder and puts both folders on LD_LIBRARY_PATH.
nccl_lib=""
for candidate in \
    "$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null)" \
    "$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)" \
    "$(dirname "$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')" 2>/dev/null)"; do
    if [ -n "$candidate" ] && [ -e "$candidate/libnccl.so.2" ]; then
        nccl_lib=$candidate
        break
    fi
done
if [ -z "$nccl_lib" ]; then
    echo "nccl-env.sh: no libnccl.so.2 found (pip install nvidia-nccl-cu12, or the libnccl2 package)" >&2
else
    nccl_link=${TMPDIR:-/tmp}/parprims-nccl-link
    mkdir -p "$nccl_link"
    ln -sf "$nccl_lib/libnccl.so.2" "$nccl_link/libnccl.so"
    export LD_LIBRARY_PATH="$nccl_link:$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "nccl-env.sh: libnccl.so -> $nccl_lib/libnccl.so.2" >&2
fi
unset nccl_lib nccl_link candidate
