// The SQLite study database (see sqlite_database.h).
#include "common/hpo/sqlite_database.h"

#include <cmath>
#include <filesystem>

#include "common/core/error.h"

namespace course::hpo {
namespace {

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    check(sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement_, nullptr));
  }
  ~Statement() { sqlite3_finalize(statement_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind(int index, const SqlValue& value) {
    if (const auto* integer = std::get_if<int64_t>(&value)) {
      check(sqlite3_bind_int64(statement_, index, *integer));
    } else if (const auto* real = std::get_if<double>(&value); real && !std::isnan(*real)) {
      check(sqlite3_bind_double(statement_, index, *real));
    } else if (const auto* text = std::get_if<std::string>(&value)) {
      check(sqlite3_bind_text(statement_, index, text->c_str(), static_cast<int>(text->size()),
                              SQLITE_TRANSIENT));
    } else {
      check(sqlite3_bind_null(statement_, index));
    }
  }

  bool step() {
    const int status = sqlite3_step(statement_);
    check(status);
    return status == SQLITE_ROW;
  }

  std::vector<SqlValue> row() const {
    std::vector<SqlValue> values(sqlite3_column_count(statement_));
    for (int i = 0; i < static_cast<int>(values.size()); ++i) {
      switch (sqlite3_column_type(statement_, i)) {
        case SQLITE_INTEGER:
          values[i] = sqlite3_column_int64(statement_, i);
          break;
        case SQLITE_FLOAT:
          values[i] = sqlite3_column_double(statement_, i);
          break;
        case SQLITE_NULL:
          break;
        default:
          values[i] =
              std::string(reinterpret_cast<const char*>(sqlite3_column_text(statement_, i)));
      }
    }
    return values;
  }

  bool writes() const { return !sqlite3_stmt_readonly(statement_); }

 private:
  void check(int status) const {
    COURSE_CHECK(status == SQLITE_OK || status == SQLITE_DONE || status == SQLITE_ROW,
                 "SQLite: ", sqlite3_errmsg(db_),
                 statement_ ? std::string(" in ") + sqlite3_sql(statement_) : std::string());
  }

  sqlite3* db_;
  sqlite3_stmt* statement_ = nullptr;
};

}  // namespace

SqliteDatabase::SqliteDatabase(const std::string& path, const StoreOptions& options) : path_(path) {
  COURSE_CHECK(options.create || std::filesystem::exists(path), "no study database at ", path,
               " (create the study first)");
  const int flags = SQLITE_OPEN_READWRITE | (options.create ? SQLITE_OPEN_CREATE : 0);
  const int status = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (status != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(status);
    sqlite3_close(db_);
    COURSE_FAIL("cannot open the study database '", path, "': ", message);
  }
  sqlite3_busy_timeout(db_, options.busy_timeout_ms);
  try {
    set_journal(options);
  } catch (const Error&) {
    const std::string message = sqlite3_errmsg(db_);
    sqlite3_close(db_);
    COURSE_FAIL("cannot use the study database '", path, "': ", message);
  }
}

void SqliteDatabase::set_journal(const StoreOptions& options) {
  if (options.journal) {
    exec(*options.journal == JournalMode::kWal ? "PRAGMA journal_mode=WAL"
                                               : "PRAGMA journal_mode=DELETE");
  }
  const SqlResult journal = run("PRAGMA journal_mode");
  const bool wal = !journal.rows.empty() && as_text(journal.rows[0][0]) == "wal";
  // WAL with NORMAL survives any process crash; the rollback journal needs FULL for that.
  exec(wal ? "PRAGMA synchronous=NORMAL" : "PRAGMA synchronous=FULL");
  exec("PRAGMA foreign_keys=ON");
}

SqliteDatabase::~SqliteDatabase() { sqlite3_close(db_); }

SqlResult SqliteDatabase::run(const std::string& sql, const std::vector<SqlValue>& params) {
  Statement statement(db_, sql);
  for (size_t i = 0; i < params.size(); ++i) statement.bind(static_cast<int>(i) + 1, params[i]);
  SqlResult result;
  while (statement.step()) result.rows.push_back(statement.row());
  if (statement.writes()) result.changed = sqlite3_changes(db_);
  return result;
}

bool SqliteDatabase::has_table(const std::string& name) {
  return !run("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", {name}).rows.empty();
}

void SqliteDatabase::run_transaction(const std::function<void()>& body) {
  if (in_transaction_) return body();
  exec("BEGIN IMMEDIATE");
  in_transaction_ = true;
  try {
    body();
    in_transaction_ = false;
    exec("COMMIT");
  } catch (...) {
    in_transaction_ = false;
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void SqliteDatabase::exec(const std::string& sql) {
  char* message = nullptr;
  const int status = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
  const std::string text = message ? message : "";
  sqlite3_free(message);
  COURSE_CHECK(status == SQLITE_OK, "SQLite on '", path_, "': ", sql, ": ", text);
}

}  // namespace course::hpo
