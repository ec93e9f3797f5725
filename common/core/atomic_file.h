// A whole file replaced at once: written beside its place, then renamed into it, so a reader (or
// a run stopped halfway) never sees half of it.
#pragma once

#include <string>

namespace course {

// Writes `text` to `path` that way; throws course::Error naming `what` ("the profiler trace")
// when it cannot.
void write_file_atomically(const std::string& path, const std::string& text,
                           const std::string& what);

}  // namespace course
