// The SQLite connection and statements (see sqlite_database.h).
#include "common/hpo/sqlite_database.h"

#include <cmath>

#include "common/core/error.h"

namespace course::hpo {
namespace {

void check(sqlite3* db, int status, const std::string& what) {
  COURSE_CHECK(status == SQLITE_OK || status == SQLITE_DONE || status == SQLITE_ROW,
               "SQLite: ", what, ": ", db ? sqlite3_errmsg(db) : sqlite3_errstr(status));
}

}  // namespace

SqliteStatement::SqliteStatement(sqlite3* db, const std::string& sql) : db_(db) {
  check(db_, sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement_, nullptr), "prepare " + sql);
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(statement_); }

SqliteStatement& SqliteStatement::bind(int index, int64_t value) {
  check(db_, sqlite3_bind_int64(statement_, index, value), "bind");
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, double value) {
  if (std::isnan(value)) return bind_null(index);
  check(db_, sqlite3_bind_double(statement_, index, value), "bind");
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, const std::string& value) {
  check(db_,
        sqlite3_bind_text(statement_, index, value.c_str(), static_cast<int>(value.size()),
                          SQLITE_TRANSIENT),
        "bind");
  return *this;
}

SqliteStatement& SqliteStatement::bind_null(int index) {
  check(db_, sqlite3_bind_null(statement_, index), "bind");
  return *this;
}

bool SqliteStatement::step() {
  const int status = sqlite3_step(statement_);
  check(db_, status, sqlite3_sql(statement_));
  return status == SQLITE_ROW;
}

void SqliteStatement::run() {
  while (step()) {
  }
}

void SqliteStatement::reset() {
  sqlite3_reset(statement_);
  sqlite3_clear_bindings(statement_);
}

int64_t SqliteStatement::column_int(int index) const {
  return sqlite3_column_int64(statement_, index);
}

double SqliteStatement::column_double(int index) const {
  return column_optional(index).value_or(std::nan(""));
}

std::optional<double> SqliteStatement::column_optional(int index) const {
  if (sqlite3_column_type(statement_, index) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(statement_, index);
}

std::string SqliteStatement::column_text(int index) const {
  const unsigned char* text = sqlite3_column_text(statement_, index);
  return text ? reinterpret_cast<const char*>(text) : "";
}

SqliteDatabase::SqliteDatabase(const std::string& path, std::optional<JournalMode> mode,
                               int busy_timeout_ms)
    : path_(path) {
  const int status =
      sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (status != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(status);
    sqlite3_close(db_);
    COURSE_FAIL("cannot open the study database '", path, "': ", message);
  }
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  try {
    if (mode) {
      exec(*mode == JournalMode::kWal ? "PRAGMA journal_mode=WAL" : "PRAGMA journal_mode=DELETE");
    }
    auto journal = prepare("PRAGMA journal_mode");
    const bool wal = journal.step() && journal.column_text(0) == "wal";
    // WAL with NORMAL survives any process crash; the rollback journal needs FULL for that.
    exec(wal ? "PRAGMA synchronous=NORMAL" : "PRAGMA synchronous=FULL");
    exec("PRAGMA foreign_keys=ON");
  } catch (const Error&) {
    const std::string message = sqlite3_errmsg(db_);
    sqlite3_close(db_);
    COURSE_FAIL("cannot use the study database '", path, "': ", message);
  }
}

SqliteDatabase::~SqliteDatabase() { sqlite3_close(db_); }

void SqliteDatabase::exec(const std::string& sql) {
  char* message = nullptr;
  const int status = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
  const std::string text = message ? message : "";
  sqlite3_free(message);
  COURSE_CHECK(status == SQLITE_OK, "SQLite on '", path_, "': ", sql, ": ", text);
}

}  // namespace course::hpo
