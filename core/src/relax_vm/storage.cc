// Memory of the relax VM (docs/spec/tvm-formats.md part 2 section 4.4, memory): allocators,
// vm.Storage, tensors
// that are views into a storage (and keep it alive), and the object types the VM introduces.
//
// The pooled allocator is TVM's: sizes rounded up to 4096 bytes, freed buffers kept per size
// and handed out again. It is process-wide and never destroyed (as TVM's MemoryManager), so a
// storage that outlives its VM (an output the caller still holds) can always be returned to it.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "polyffi/error.h"
#include "relax_vm.h"

namespace polyffi {
namespace relax_vm {
namespace {

void* AlignedAlloc(size_t nbytes) {
  size_t n = (std::max<size_t>(nbytes, 1) + 63) / 64 * 64;
  if (n < nbytes) Throw("RuntimeError", "out of memory allocating ", nbytes, " bytes");
  void* p = std::aligned_alloc(64, n);
  if (p == nullptr) Throw("RuntimeError", "out of memory allocating ", nbytes, " bytes");
  return p;
}

class NaiveAllocator final : public Allocator {
 public:
  void* Alloc(size_t nbytes, size_t* actual) override {
    *actual = nbytes;
    return AlignedAlloc(nbytes);
  }
  void Free(void* p, size_t) override { std::free(p); }
};

/*!
 * \brief A lock for the pool's short critical sections (a lookup and a push or pop): cheaper
 *  than a mutex on the path every storage of every call takes; waiters yield.
 */
class SpinLock {
 public:
  void lock() {
    while (flag_.exchange(true, std::memory_order_acquire)) {
      while (flag_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

class PooledAllocator final : public Allocator {
 public:
  static constexpr size_t kPage = 4096;
  void* Alloc(size_t nbytes, size_t* actual) override {
    if (nbytes > SIZE_MAX - kPage) Throw("RuntimeError", "out of memory allocating ", nbytes);
    size_t size = (std::max<size_t>(nbytes, 1) + kPage - 1) / kPage * kPage;
    *actual = size;
    {
      std::lock_guard<SpinLock> lock(mu_);
      auto it = pool_.find(size);
      if (it != pool_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        pooled_bytes_ -= size;
        return p;
      }
    }
    return AlignedAlloc(size);
  }
  void Free(void* p, size_t actual) override {
    {
      std::lock_guard<SpinLock> lock(mu_);
      // TVM keeps every freed buffer; with many distinct sizes (dynamic shapes) that grows
      // without bound, so beyond kMaxPooledBytes of idle buffers they go back to the system.
      if (pooled_bytes_ + actual <= kMaxPooledBytes) {
        try {
          pool_[actual].push_back(p);  // may allocate: called from destructors, so never throw
          pooled_bytes_ += actual;
          return;
        } catch (...) {
        }
      }
    }
    std::free(p);
  }
  void Clear() override {
    std::unordered_map<size_t, std::vector<void*>> idle;
    {
      std::lock_guard<SpinLock> lock(mu_);
      idle.swap(pool_);
      pooled_bytes_ = 0;
    }
    for (auto& entry : idle) {
      for (void* p : entry.second) std::free(p);
    }
  }

 private:
  static constexpr size_t kMaxPooledBytes = size_t{256} << 20;
  SpinLock mu_;
  size_t pooled_bytes_ = 0;
  std::unordered_map<size_t, std::vector<void*>> pool_;
};

}  // namespace

Allocator* Allocator::Get(int kind) {
  static Allocator* naive = new NaiveAllocator();
  static Allocator* pooled = new PooledAllocator();
  if (kind == kNaive) return naive;
  if (kind == kPooled) return pooled;
  Throw("ValueError", "unknown allocator kind ", kind, " (1 = naive, 2 = pooled)");
}

uint32_t StorageObj::RuntimeTypeIndex() {
  static const uint32_t index = RegisterTypeKey("vm.Storage", TypeIndex::kObject);
  return index;
}

uint32_t ClosureObj::RuntimeTypeIndex() {
  static const uint32_t index = RegisterTypeKey("relax.vm.Closure", TypeIndex::kObject);
  return index;
}

// Registered at load time too, so the keys are known before the first object exists.
[[maybe_unused]] static const uint32_t kRegisterTypes[] = {StorageObj::RuntimeTypeIndex(),
                                                           ClosureObj::RuntimeTypeIndex()};

StorageObj::StorageObj(Allocator* alloc, size_t nbytes, DLDevice dev)
    : Object(RuntimeTypeIndex()), size(nbytes), device(dev), alloc_(alloc) {
  data = alloc_->Alloc(nbytes, &actual_);
}

StorageObj::~StorageObj() { alloc_->Free(data, actual_); }

ObjectPtr<NDArrayObj> TensorInStorage(const ObjectPtr<StorageObj>& storage, int64_t offset,
                                      const int64_t* shape, int ndim, DLDataType dtype) {
  if (dtype.bits == 0 || dtype.lanes == 0 || (dtype.bits % 8 != 0 && dtype.bits != 1)) {
    Throw("ValueError", "vm.builtin.alloc_tensor: unsupported dtype (code ", int(dtype.code),
          ", bits ", int(dtype.bits), ", lanes ", dtype.lanes, ")");
  }
  size_t need = CheckedBytes(shape, ndim, dtype);
  if (offset < 0 || static_cast<uint64_t>(offset) > storage->size ||
      need > storage->size - static_cast<uint64_t>(offset)) {
    Throw("ValueError", "storage allocation failure, attempted to allocate ", need,
          " bytes at offset ", offset, " in a region of ", storage->size, " bytes");
  }
  // The offset goes into the data pointer: TVM's kernels require byte_offset == 0.
  return NDArrayObj::View(static_cast<char*>(storage->data) + offset, shape, ndim, dtype,
                          storage->device, ObjectPtr<Object>::Borrow(storage.get()));
}

ObjectPtr<NDArrayObj> ReshapeView(const DLTensor& t, ObjectPtr<Object> owner,
                                  const ShapeObj& shape) {
  size_t old_bytes = CompactBytes(t);
  size_t new_bytes = CheckedBytes(shape.data(), static_cast<int>(shape.size()), t.dtype);
  if (old_bytes != new_bytes) {
    Throw("ValueError", "vm.builtin.reshape: cannot view a tensor of shape ",
          ShapeString(t.shape, t.ndim), " as shape ",
          ShapeString(shape.data(), static_cast<int64_t>(shape.size())),
          " (the element counts differ)");
  }
  return NDArrayObj::View(static_cast<char*>(t.data) + t.byte_offset, shape.data(),
                          static_cast<int>(shape.size()), t.dtype, t.device, std::move(owner));
}

}  // namespace relax_vm
}  // namespace polyffi
