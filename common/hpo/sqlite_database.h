// A thin RAII layer over SQLite: a connection, prepared statements, and write transactions
// that many processes can run against one file.
//
// Every connection waits up to busy_timeout for another writer instead of failing with
// "database is locked", and writes go through BEGIN IMMEDIATE transactions, which take the
// write lock before reading: a reader that later wants to write cannot deadlock against
// another one (the case a busy timeout cannot resolve).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

namespace course::hpo {

enum class JournalMode {
  kWal,     // write-ahead log: readers never block writers; all processes on one host
  kDelete,  // rollback journal: POSIX locks only, for file systems several hosts share
};

class SqliteStatement {
 public:
  SqliteStatement(sqlite3* db, const std::string& sql);
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  SqliteStatement& bind(int index, int64_t value);
  SqliteStatement& bind(int index, double value);  // NaN is stored as NULL
  SqliteStatement& bind(int index, const std::string& value);
  SqliteStatement& bind_null(int index);

  bool step();   // true while a row is available
  void run();    // steps a statement that returns no rows
  void reset();  // ready to bind and run again

  int64_t column_int(int index) const;
  double column_double(int index) const;  // NULL reads back as NaN
  std::optional<double> column_optional(int index) const;
  std::string column_text(int index) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* statement_ = nullptr;
};

class SqliteDatabase {
 public:
  // Opens (creating) the file; `mode` switches its journal (the choice is kept in the file,
  // so only whoever creates a study sets it). Synchronous writes follow the file's mode.
  SqliteDatabase(const std::string& path, std::optional<JournalMode> mode, int busy_timeout_ms);
  ~SqliteDatabase();
  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;

  void exec(const std::string& sql);
  SqliteStatement prepare(const std::string& sql) { return SqliteStatement(db_, sql); }
  int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
  int changes() const { return sqlite3_changes(db_); }

  // Runs body inside BEGIN IMMEDIATE ... COMMIT; rolls back and rethrows if it throws.
  template <class Body>
  auto write_transaction(Body&& body) {
    exec("BEGIN IMMEDIATE");
    try {
      if constexpr (std::is_void_v<decltype(body())>) {
        body();
        exec("COMMIT");
      } else {
        auto result = body();
        exec("COMMIT");
        return result;
      }
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace course::hpo
