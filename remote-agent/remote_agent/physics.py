"""A floor from physics: no honest kernel moves a problem's bytes faster than the device's memory can, nor does its
arithmetic faster than the device's fastest units that keep float32 accuracy. The vendor's peak figures per GPU
model; a device we have no figures for gets no floor.

Sources (the vendors' own data sheets): NVIDIA H100 Tensor Core GPU datasheet (H100 SXM: 3,350 GB/s HBM3, FP32
67 TFLOPS, TF32 Tensor Core 494.7 TFLOPS dense; H100 PCIe/NVL: 2,000 / 3,900 GB/s, 51 / 60 TFLOPS FP32, 378 /
417 TF32 dense); NVIDIA H200 datasheet (4,800 GB/s, the H100 SXM's compute); AMD Instinct MI300X data sheet
(5.3 TB/s HBM3, 163.4 TFLOPS FP32 matrix, 653.7 TF32 dense). The compute ceiling is the TF32 tensor rate: a
float32 result that passes our tolerances may still be made on tensor cores (3xTF32 emulation), so only a
time faster than even that is impossible."""

# (name fragment, as nvidia-smi / torch report it; peak DRAM bytes per second; peak FLOP/s of the fastest units).
PEAKS = [
    ("H100 NVL", 3.9e12, 417e12),
    ("H100 PCIe", 2.0e12, 378e12),
    ("H100", 3.35e12, 494.7e12),
    ("H200", 4.8e12, 494.7e12),
    ("MI300X", 5.3e12, 653.7e12),
]
# A measured time below the floor by more than this share is impossible, not noise.
SLACK = 0.05


def peaks(device_name):
    """(bytes per second, FLOP/s) for a device name, or None."""
    for fragment, bandwidth, flops in PEAKS:
        if fragment.lower() in (device_name or "").lower():
            return bandwidth, flops
    return None


def floor_ms(device_name, bytes_moved, flops):
    """The least time the device can take for this work, in milliseconds; None without figures."""
    known = peaks(device_name)
    if known is None:
        return None
    bandwidth, rate = known
    return 1000.0 * max(bytes_moved / bandwidth, flops / rate)


def impossible(measured_ms, floor):
    """Whether a time is faster than the floor allows, beyond the slack."""
    return floor is not None and measured_ms is not None and measured_ms < floor * (1 - SLACK)
