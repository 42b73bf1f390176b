// kernel-runner's HIP-to-CUDA header: the HIP runtime API a kernel author uses, mapped onto CUDA, so HIP
// source compiles with nvcc on NVIDIA GPUs. (HIP's own NVIDIA headers do not build with CUDA 13.)
// Covers: errors, device management and properties, memory (sync, async, host, 2-D), launch, streams,
// events, occupancy, math and warp intrinsics, and the hipThreadIdx_x family of built-ins.
#pragma once
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>

// ---- types and errors
typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;
typedef cudaMemcpyKind hipMemcpyKind;
typedef cudaFuncAttributes hipFuncAttributes;
typedef cudaPointerAttributes hipPointerAttribute_t;
typedef cudaDeviceAttr hipDeviceAttribute_t;
typedef dim3 hipDim3_t;
typedef __half hip_half;
typedef __nv_bfloat16 hip_bfloat16;
typedef __nv_bfloat16 __hip_bfloat16;  // ROCm 6's name (hip/hip_bf16.h)

#define hipSuccess cudaSuccess
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipErrorNotReady cudaErrorNotReady
#define hipErrorInvalidDevice cudaErrorInvalidDevice
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError

// ---- devices
#define hipGetDeviceCount cudaGetDeviceCount
#define hipGetDevice cudaGetDevice
#define hipSetDevice cudaSetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipDeviceReset cudaDeviceReset
#define hipDeviceAttributeMaxThreadsPerBlock cudaDevAttrMaxThreadsPerBlock
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeWarpSize cudaDevAttrWarpSize
#define hipDeviceAttributeMaxSharedMemoryPerBlock cudaDevAttrMaxSharedMemoryPerBlock
#define hipDeviceAttributeL2CacheSize cudaDevAttrL2CacheSize
#define hipDeviceAttributeClockRate cudaDevAttrClockRate
#define hipFuncGetAttributes cudaFuncGetAttributes
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize

// ---- memory
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMallocManaged cudaMallocManaged
#define hipMallocAsync cudaMallocAsync
#define hipFreeAsync cudaFreeAsync
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpy2D cudaMemcpy2D
#define hipMemcpyToSymbol cudaMemcpyToSymbol
#define hipMemcpyFromSymbol cudaMemcpyFromSymbol
#define hipMemset cudaMemset
#define hipMemsetAsync cudaMemsetAsync
#define hipMemGetInfo cudaMemGetInfo
#define hipPointerGetAttributes cudaPointerGetAttributes
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyHostToHost cudaMemcpyHostToHost
#define hipMemcpyDefault cudaMemcpyDefault
#define hipHostMalloc(ptr, size, flags) cudaMallocHost((ptr), (size))
#define hipHostFree cudaFreeHost
#define hipMallocHost cudaMallocHost
#define hipFreeHost cudaFreeHost
#define hipHostMallocDefault 0

// ---- streams and events
#define hipStreamCreate cudaStreamCreate
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamCreateWithPriority cudaStreamCreateWithPriority
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamQuery cudaStreamQuery
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipStreamDefault cudaStreamDefault
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamPerThread cudaStreamPerThread
#define hipEventCreate cudaEventCreate
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventQuery cudaEventQuery
#define hipEventElapsedTime cudaEventElapsedTime
#define hipEventDestroy cudaEventDestroy
#define hipEventDefault cudaEventDefault
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventBlockingSync cudaEventBlockingSync

// ---- launch and occupancy
#define hipLaunchKernelGGL(kernel, grid, block, shared, stream, ...) \
  kernel<<<(grid), (block), (shared), (stream)>>>(__VA_ARGS__)
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_SYMBOL(symbol) symbol
#define hipLaunchKernel cudaLaunchKernel
#define hipOccupancyMaxPotentialBlockSize cudaOccupancyMaxPotentialBlockSize
#define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor

// ---- built-in indices (HIP's older spellings)
#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z

// ---- warp intrinsics: HIP's maskless forms act on the whole warp.
#define KR_FULL_MASK 0xffffffffu
template <typename T>
__device__ inline T __shfl(T var, int src, int width = warpSize) { return __shfl_sync(KR_FULL_MASK, var, src, width); }
template <typename T>
__device__ inline T __shfl_up(T var, unsigned delta, int width = warpSize) {
  return __shfl_up_sync(KR_FULL_MASK, var, delta, width);
}
template <typename T>
__device__ inline T __shfl_down(T var, unsigned delta, int width = warpSize) {
  return __shfl_down_sync(KR_FULL_MASK, var, delta, width);
}
template <typename T>
__device__ inline T __shfl_xor(T var, int mask, int width = warpSize) {
  return __shfl_xor_sync(KR_FULL_MASK, var, mask, width);
}
// CUDA still declares old __ballot/__any/__all with other signatures: macros take the call sites over.
#define __ballot(predicate) ((unsigned long long)__ballot_sync(KR_FULL_MASK, (predicate)))
#define __any(predicate) __any_sync(KR_FULL_MASK, (predicate))
#define __all(predicate) __all_sync(KR_FULL_MASK, (predicate))
