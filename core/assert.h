// Always-on assertions (TigerBeetle's habit): a broken TW_ASSERT prints file,
// line and the condition that failed, then aborts, in every build type. They
// state what must hold; they are not error handling (outside input gets a
// Status, never an assertion).
#pragma once

namespace tensorwire {

[[noreturn]] void assertion_failed(const char* condition, const char* file, int line,
                                   const char* why);

}  // namespace tensorwire

#define TW_ASSERT(condition)                                                   \
  do {                                                                         \
    if (!(condition)) [[unlikely]] {                                           \
      ::tensorwire::assertion_failed(#condition, __FILE__, __LINE__, nullptr); \
    }                                                                          \
  } while (false)

// With a literal saying why it must hold.
#define TW_ASSERT_MSG(condition, why)                                       \
  do {                                                                      \
    if (!(condition)) [[unlikely]] {                                        \
      ::tensorwire::assertion_failed(#condition, __FILE__, __LINE__, why);  \
    }                                                                       \
  } while (false)

// For branches that cannot be reached if the code is right.
#define TW_UNREACHABLE(why) ::tensorwire::assertion_failed("unreachable", __FILE__, __LINE__, why)
