#pragma once
// Ownership of a C library's object: a unique_ptr that frees it with the
// library's own function (EVP_PKEY_free, git_repository_free, ...).

#include <memory>

namespace airlock {

/// The deleter that calls `Free`.
template <typename T, void (*Free)(T*)>
struct FreeWith {
  void operator()(T* p) const { Free(p); }
};

/// A T* owned and freed with `Free`.
template <typename T, void (*Free)(T*)>
using CPtr = std::unique_ptr<T, FreeWith<T, Free>>;

}  // namespace airlock
