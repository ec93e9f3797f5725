// The SQL the study storage speaks, over a SQLite file or a PostgreSQL server: one statement at
// a time with `?` parameters, and transactions. The study's location chooses: a path is a SQLite
// file, `postgresql://user@host:port/dbname` (or `postgres://`) a server, whose password comes
// from PGPASSFILE or ~/.pgpass, never from the location (it would show in `ps` and in logs).
//
// How writers are kept apart: SQLite takes the whole file's write lock (BEGIN IMMEDIATE);
// PostgreSQL locks the one study's row (lock_row, SELECT ... FOR UPDATE) at the start of each of
// its transactions, so the workers of one study take turns (the sampler must see every trial the
// others started, and trial numbers stay unique) while other studies on the server go on. Row
// locks rather than SERIALIZABLE: a worker waits its turn instead of doing the sampling and then
// retrying it on a serialisation failure.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace course::hpo {

// NULL, an integer, a double (NaN is stored as NULL) or text.
using SqlValue = std::variant<std::monostate, int64_t, double, std::string>;

int64_t as_int(const SqlValue& value);
std::optional<double> as_optional_double(const SqlValue& value);  // NULL is nothing
double as_double(const SqlValue& value);                          // NULL is NaN
std::string as_text(const SqlValue& value);

struct SqlResult {
  std::vector<std::vector<SqlValue>> rows;
  int64_t changed = 0;  // rows an INSERT, UPDATE or DELETE changed
};

enum class JournalMode {
  kWal,     // write-ahead log: readers never block writers; all processes on one host
  kDelete,  // rollback journal: POSIX locks only, for file systems several hosts share
};

struct StoreOptions {
  bool create = false;                 // a SQLite file is made only by whoever creates a study
  std::optional<JournalMode> journal;  // SQLite: switches the file's journal (kept in the file)
  int busy_timeout_ms = 600000;        // SQLite: how long to wait for another writer
  double reconnect_seconds = 60;       // PostgreSQL: how long to retry a server that went away
};

class SqlDatabase {
 public:
  virtual ~SqlDatabase() = default;

  virtual SqlResult run(const std::string& sql, const std::vector<SqlValue>& params = {}) = 0;
  virtual bool has_table(const std::string& name) = 0;
  // Locks the row with this id until the transaction ends (see the top of this file).
  virtual void lock_row(const std::string& table, int64_t id) = 0;
  // The schema's one difference: an integer primary key the database assigns on insert.
  virtual const char* generated_id_column() const = 0;
  // The location as given (a server's has no password: see the top of this file).
  virtual const std::string& location() const = 0;

  // Runs body as one transaction; rolled back and rethrown if it throws. PostgreSQL runs it
  // again after reconnecting when the server went away (so body must not act outside the
  // database); a transaction inside another is part of it.
  template <class Body>
  auto transaction(Body&& body) -> decltype(body()) {
    if constexpr (std::is_void_v<decltype(body())>) {
      run_transaction(body);
    } else {
      std::optional<decltype(body())> result;
      run_transaction([&] { result.emplace(body()); });
      return std::move(*result);
    }
  }

 protected:
  virtual void run_transaction(const std::function<void()>& body) = 0;
};

// True for a PostgreSQL location; any other `scheme://` is refused with one message.
bool is_server_location(const std::string& location);
std::unique_ptr<SqlDatabase> open_sql_database(const std::string& location,
                                               const StoreOptions& options);

}  // namespace course::hpo
