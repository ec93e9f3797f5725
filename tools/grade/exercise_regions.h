// The exercises of a trainee's file, as tools/labgen marks them: each exercise's code lies
// between "// BEGIN EXERCISE TPd.n: what to do" and "// END EXERCISE", and an exercise not
// attempted still calls its stub, exercise_todo("TPd.n", ...). The grader reads which exercises
// a file holds, which are still stubs, which one a compiler error's line falls in, and puts the
// stub back into an exercise that does not compile so that the file's other exercises can be
// graded.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace course::grade {

struct ExerciseRegion {
  std::string id;                 // "TP2.4"
  std::string task;               // the marker's text after the id
  int begin_line = 0;             // the BEGIN marker's line, 1-based
  int end_line = 0;               // the END marker's line
  std::vector<std::string> body;  // the lines between them
  // Whether the body is still the stub labgen wrote.
  bool is_stub() const;
  // The sheet section the stub names ("day2_ddp/README.md#tp24"), or "" when the stub is gone.
  std::string sheet_anchor() const;
};

// The exercises of a file's text, in order; an unclosed or nested marker is an error naming
// `file` and the line.
std::vector<ExerciseRegion> exercise_regions(const std::string& file, const std::string& text);

// The exercise whose lines hold `line`, if any.
const ExerciseRegion* region_at_line(const std::vector<ExerciseRegion>& regions, int line);

// `text` with exercise `id`'s body replaced by `body` (the markers kept).
std::string with_body(const std::string& text, const std::string& id,
                      const std::vector<std::string>& body);

}  // namespace course::grade
