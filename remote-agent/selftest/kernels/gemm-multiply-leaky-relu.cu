// A known-correct solution of gemm-multiply-leaky-relu (the catalog's check; not shown to users): a shared-memory
// tiled product, one output element per thread in 16 x 16 blocks over (N, M) as the problem's launch gives them,
// input rows and weight rows (weight is N x K) staged 16 x 16 at a time, the sum z kept in float; then
// y = 2 z, output = y > 0 ? y : 0.1 y.
#define TILE 16
__global__ void solution(const float* input, const float* weight, const float* bias, float* output, size_t M,
                         size_t N, size_t K) {
  __shared__ float in_tile[TILE][TILE + 1];
  __shared__ float w_tile[TILE][TILE + 1];  // w_tile[j][k]: weight row blockIdx.x * TILE + j
  const size_t row = blockIdx.y * (size_t)TILE + threadIdx.y, col = blockIdx.x * (size_t)TILE + threadIdx.x;
  const size_t w_row = blockIdx.x * (size_t)TILE + threadIdx.y;  // the weight row this thread stages
  float acc = 0.0f;
  for (size_t t = 0; t < K; t += TILE) {
    in_tile[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? input[row * K + t + threadIdx.x] : 0.0f;
    w_tile[threadIdx.y][threadIdx.x] = (w_row < N && t + threadIdx.x < K) ? weight[w_row * K + t + threadIdx.x] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += in_tile[threadIdx.y][k] * w_tile[threadIdx.x][k];
    __syncthreads();
  }
  if (row < M && col < N) {
    const float z = acc + bias[col];
    const float y = z * 2.0f;
    output[row * N + col] = y > 0.0f ? y : 0.1f * y;
  }
}
