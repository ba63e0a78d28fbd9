"""Prints one JSON line describing this machine's torch, triton and GPUs (run as a subprocess)."""

import gc
import json
import platform
from pathlib import Path


def main() -> None:
    # it imports torch and triton, prints one line and ends: the collector, which would look through the some 300,000
    # objects of the imports again and again as they come (a sixth of the probe's CPU time), has nothing to free here
    gc.disable()
    import numpy
    import torch
    import triton

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    driver = None
    version_file = Path("/proc/driver/nvidia/version")
    if version_file.exists():
        driver = next((t for t in version_file.read_text().split() if t.replace(".", "").isdigit() and "." in t), None)
    print(
        json.dumps(
            {
                "python": platform.python_version(),
                "torch": torch.__version__,
                "triton": triton.__version__,
                "numpy": numpy.__version__,
                "cuda": torch.version.cuda,
                "driver": driver,
                "gpus": [torch.cuda.get_device_name(i) for i in range(count)],
            }
        )
    )


if __name__ == "__main__":
    main()
