// The thread pool behind TVMBackendParallelLaunch, and the per-thread workspace pool.
#ifndef POLYFFI_CORE_THREAD_POOL_H_
#define POLYFFI_CORE_THREAD_POOL_H_

#include <polyffi/c_backend_api.h>

#include <cstdint>

namespace polyffi {

/*! \brief Run a parallel launch; returns 0 or -1 (the failing task's error becomes ours). */
int ParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task);
int ParallelBarrier(int task_id, TVMParallelGroupEnv* penv);
/*! \brief Threads used by a launch (TVM_NUM_THREADS or the number of cores). */
int ParallelNumThreads();

void* WorkspaceAlloc(uint64_t nbytes);
void WorkspaceFree(void* ptr);

}  // namespace polyffi
#endif  // POLYFFI_CORE_THREAD_POOL_H_
