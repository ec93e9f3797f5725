// The study storage's SQL on one SQLite file that many worker processes share.
//
// Every connection waits up to busy_timeout for another writer instead of failing with
// "database is locked", and transactions are BEGIN IMMEDIATE, which takes the write lock before
// reading: a reader that later wants to write cannot deadlock against another one (the case a
// busy timeout cannot resolve).
#pragma once

#include <sqlite3.h>

#include <string>

#include "common/hpo/sql_database.h"

namespace course::hpo {

class SqliteDatabase final : public SqlDatabase {
 public:
  // Opens the file (made only with options.create); options.journal switches its journal (the
  // choice is kept in the file). Synchronous writes follow the file's mode.
  SqliteDatabase(const std::string& path, const StoreOptions& options);
  ~SqliteDatabase() override;
  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;

  SqlResult run(const std::string& sql, const std::vector<SqlValue>& params = {}) override;
  bool has_table(const std::string& name) override;
  void lock_row(const std::string&, int64_t) override {}  // the transaction holds the file's
  const char* generated_id_column() const override { return "INTEGER PRIMARY KEY"; }
  const std::string& location() const override { return path_; }

 protected:
  void run_transaction(const std::function<void()>& body) override;

 private:
  void exec(const std::string& sql);
  void set_journal(const StoreOptions& options);

  sqlite3* db_ = nullptr;
  std::string path_;
  bool in_transaction_ = false;
};

}  // namespace course::hpo
