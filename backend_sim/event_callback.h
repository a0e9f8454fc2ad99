// What an event runs: a move-only callable kept inside the event's slot.
// Every callable the simulator schedules (a lambda holding a few ids and
// pointers, or a std::function handed down) fits the inline buffer, so
// scheduling an event allocates nothing, where a std::function would
// allocate for any capture beyond two pointers. A larger callable still
// works: it is kept on the heap.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace tensorwire::sim {

class EventCallback {
 public:
  static constexpr size_t kInlineBytes = 56;

  EventCallback() = default;
  EventCallback(std::nullptr_t) {}  // NOLINT: reads as "no callback", like std::function
  template <typename F, typename Fn = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<Fn, EventCallback> &&
                                        std::is_invocable_r_v<void, Fn&>>>
  EventCallback(F&& f) {  // NOLINT: implicit, so that call sites pass lambdas as before
    construct<Fn>(std::forward<F>(f));
  }
  EventCallback(EventCallback&& other) noexcept { take(other); }
  EventCallback& operator=(EventCallback&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  EventCallback(const EventCallback&) = delete;
  EventCallback& operator=(const EventCallback&) = delete;
  ~EventCallback() { reset(); }

  // Replaces what this holds with `f`, built in place: the event queue puts
  // a callable straight into its slot, with no temporary to move from.
  template <typename F>
  void emplace(F&& f) {
    using Fn = std::decay_t<F>;
    reset();
    if constexpr (std::is_same_v<Fn, EventCallback>) {
      static_assert(std::is_rvalue_reference_v<F&&>, "an EventCallback is moved, never copied");
      take(f);
    } else {
      static_assert(std::is_invocable_r_v<void, Fn&>, "an event runs a callable of no arguments");
      construct<Fn>(std::forward<F>(f));
    }
  }

  void reset() {
    if (ops_ != nullptr && ops_->destroy != nullptr) ops_->destroy(storage_);
    ops_ = nullptr;
  }
  explicit operator bool() const { return ops_ != nullptr; }
  bool operator==(std::nullptr_t) const { return ops_ == nullptr; }
  void operator()() { ops_->invoke(storage_); }

 private:
  // A callable that is trivially copyable and destructible (a lambda of
  // ids and pointers: most events) has no move or destroy: its bytes are
  // copied and dropped, with no indirect call per move and per event.
  struct Ops {
    void (*invoke)(void* storage);
    void (*move)(void* from, void* to);  // leaves `from` destroyed; nullptr: copy the bytes
    void (*destroy)(void* storage);      // nullptr: nothing to do
  };
  template <typename Fn>
  static constexpr bool fits_inline() {
    return sizeof(Fn) <= kInlineBytes && alignof(Fn) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<Fn>;
  }
  template <typename Fn>
  static constexpr bool trivial() {
    return std::is_trivially_copyable_v<Fn> && std::is_trivially_destructible_v<Fn>;
  }
  template <typename Fn>
  static void move_inline(void* from, void* to) {
    Fn* f = std::launder(static_cast<Fn*>(from));
    ::new (to) Fn(std::move(*f));
    f->~Fn();
  }
  template <typename Fn>
  static void destroy_inline(void* s) {
    std::launder(static_cast<Fn*>(s))->~Fn();
  }
  template <typename Fn>
  static constexpr Ops kInlineOps{[](void* s) { (*std::launder(static_cast<Fn*>(s)))(); },
                                  trivial<Fn>() ? nullptr : &move_inline<Fn>,
                                  trivial<Fn>() ? nullptr : &destroy_inline<Fn>};
  template <typename Fn>
  static constexpr Ops kHeapOps{
      [](void* s) { (**static_cast<Fn**>(s))(); },
      [](void* from, void* to) { *static_cast<Fn**>(to) = *static_cast<Fn**>(from); },
      [](void* s) { delete *static_cast<Fn**>(s); }};

  template <typename Fn, typename F>
  void construct(F&& f) {
    if constexpr (fits_inline<Fn>()) {
      ::new (static_cast<void*>(storage_)) Fn(std::forward<F>(f));
      ops_ = &kInlineOps<Fn>;
    } else {
      *reinterpret_cast<Fn**>(storage_) = new Fn(std::forward<F>(f));
      ops_ = &kHeapOps<Fn>;
    }
  }

  void take(EventCallback& other) {
    ops_ = other.ops_;
    if (ops_ != nullptr) {
      if (ops_->move != nullptr) {
        ops_->move(other.storage_, storage_);
      } else {
        std::memcpy(storage_, other.storage_, kInlineBytes);
      }
    }
    other.ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

}  // namespace tensorwire::sim
