"""GPU memory that two worker processes share: the judge allocates and exports it, a candidate worker maps it.

The allocation is a CUDA driver shareable allocation (cuMemCreate) exported as a POSIX file descriptor.
Unlike the runtime's IPC handles (cudaIpcGetMemHandle), a file descriptor works across the PID namespaces
that the sandbox gives each worker. The descriptor travels on the worker's side socket
(wire/_side.py). The importer maps it read-only or read-write, as the exporter's message says.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from adaexplore.executor.worker.confine._faults import DeviceMemoryError

__all__ = ["DeviceBuffer", "export_buffer", "import_buffer"]


def _driver() -> Any:
    from cuda.bindings import driver  # loaded on a GPU only: it finds libcuda, which CPU machines lack

    return driver


def _check(result: Any, what: str) -> Any:
    error, *rest = result if isinstance(result, tuple) else (result,)
    driver = _driver()
    if error != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(error)
        raise DeviceMemoryError(f"{what} failed: {name.decode() if isinstance(name, bytes) else name}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


class _ArrayInterface:
    """Presents a device address range to torch.as_tensor (the CUDA array interface), without copying."""

    def __init__(self, address: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (address, False),
            "version": 3,
            "stream": None,
        }


def _location(driver: Any, device: int) -> Any:
    location = driver.CUmemLocation()
    location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    location.id = device
    return location


def _granularity(driver: Any, device: int) -> int:
    prop = _properties(driver, device)
    flag = driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
    return int(_check(driver.cuMemGetAllocationGranularity(prop, flag), "cuMemGetAllocationGranularity"))


def _properties(driver: Any, device: int) -> Any:
    prop = driver.CUmemAllocationProp()
    prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location = _location(driver, device)
    prop.requestedHandleTypes = driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    return prop


class DeviceBuffer:
    """A mapping of a shareable allocation in this process, seen as a uint8 tensor of `nbytes`."""

    def __init__(self, handle: Any, size: int, nbytes: int, device: int, *, writable: bool) -> None:
        driver = _driver()
        self.nbytes = nbytes
        self.size = size
        self.device = device
        self._handle = handle
        self._address: Any = None
        try:
            self._address = _check(driver.cuMemAddressReserve(size, 0, 0, 0), "cuMemAddressReserve")
            _check(driver.cuMemMap(self._address, size, 0, handle, 0), "cuMemMap")
            access = driver.CUmemAccessDesc()
            access.location = _location(driver, device)
            flags = driver.CUmemAccess_flags
            access.flags = flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE if writable else flags.CU_MEM_ACCESS_FLAGS_PROT_READ
            _check(driver.cuMemSetAccess(self._address, size, [access], 1), "cuMemSetAccess")
        except BaseException:
            self.close()
            raise
        self.tensor = torch.as_tensor(_ArrayInterface(int(self._address), nbytes), device=f"cuda:{device}")

    def view(self, offset: int, shape: list[int], dtype: torch.dtype) -> torch.Tensor:
        """The tensor of `shape` and `dtype` at byte `offset` (no copy)."""
        count = 1
        for n in shape:
            count *= n
        itemsize = torch.empty(0, dtype=dtype).element_size()
        end = offset + count * itemsize
        if offset < 0 or end > self.nbytes or offset % max(itemsize, 1):
            raise ValueError(f"a tensor of {count * itemsize} bytes at offset {offset} lies outside the buffer")
        return self.tensor[offset:end].view(dtype).view(shape)

    def export(self) -> int:
        """A new file descriptor for the allocation, for another process (the caller closes it once sent)."""
        driver = _driver()
        kind = driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        return int(_check(driver.cuMemExportToShareableHandle(self._handle, kind, 0), "cuMemExportToShareableHandle"))

    def close(self) -> None:
        """Unmap and release. The memory is freed once every process that maps it has let it go."""
        driver = _driver()
        self.tensor = None  # type: ignore[assignment]  # released: a closed buffer is not read again
        if self._address is not None:
            torch.cuda.synchronize(self.device)
            driver.cuMemUnmap(self._address, self.size)
            driver.cuMemAddressFree(self._address, self.size)
            self._address = None
        if self._handle is not None:
            driver.cuMemRelease(self._handle)
            self._handle = None


def export_buffer(nbytes: int, device: int) -> DeviceBuffer:
    """Allocate `nbytes` of shareable memory on `device`, mapped read-write here."""
    torch.cuda.init()
    driver = _driver()
    granularity = _granularity(driver, device)
    size = max(granularity, -(-nbytes // granularity) * granularity)
    handle = _check(driver.cuMemCreate(size, _properties(driver, device), 0), "cuMemCreate")
    return DeviceBuffer(handle, size, nbytes, device, writable=True)


def import_buffer(fd: int, nbytes: int, device: int, *, writable: bool) -> DeviceBuffer:
    """Map the allocation another process exported as `fd` (closed here)."""
    torch.cuda.init()
    driver = _driver()
    kind = driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    try:
        handle = _check(driver.cuMemImportFromShareableHandle(fd, kind), "cuMemImportFromShareableHandle")
    finally:
        os.close(fd)
    granularity = _granularity(driver, device)
    size = max(granularity, -(-nbytes // granularity) * granularity)
    return DeviceBuffer(handle, size, nbytes, device, writable=writable)
