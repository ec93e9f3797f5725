// Values of a result, and the choice of database by the study's location (see sql_database.h).
#include "common/hpo/sql_database.h"

#include <cmath>

#include "common/core/error.h"
#include "common/hpo/postgres_database.h"
#include "common/hpo/sqlite_database.h"

namespace course::hpo {

int64_t as_int(const SqlValue& value) {
  if (const auto* integer = std::get_if<int64_t>(&value)) return *integer;
  if (const auto* real = std::get_if<double>(&value)) return static_cast<int64_t>(*real);
  COURSE_FAIL("the study database holds a non-number where an integer belongs");
}

std::optional<double> as_optional_double(const SqlValue& value) {
  if (const auto* real = std::get_if<double>(&value)) return *real;
  if (const auto* integer = std::get_if<int64_t>(&value)) return static_cast<double>(*integer);
  COURSE_CHECK(std::holds_alternative<std::monostate>(value),
               "the study database holds text where a number belongs");
  return std::nullopt;
}

double as_double(const SqlValue& value) { return as_optional_double(value).value_or(std::nan("")); }

std::string as_text(const SqlValue& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  COURSE_CHECK(std::holds_alternative<std::monostate>(value),
               "the study database holds a number where text belongs");
  return "";
}

bool is_server_location(const std::string& location) {
  const size_t scheme_end = location.find("://");
  if (scheme_end == std::string::npos) return false;
  const std::string scheme = location.substr(0, scheme_end);
  COURSE_CHECK(scheme == "postgresql" || scheme == "postgres", "the study location ", location,
               " has the scheme '", scheme,
               "': give a SQLite file's path or a postgresql:// server's URL");
  return true;
}

std::unique_ptr<SqlDatabase> open_sql_database(const std::string& location,
                                               const StoreOptions& options) {
  if (is_server_location(location)) {
    return std::make_unique<PostgresDatabase>(location, options.reconnect_seconds);
  }
  return std::make_unique<SqliteDatabase>(location, options);
}

}  // namespace course::hpo
