// The PostgreSQL study database (see postgres_database.h).
#include "common/hpo/postgres_database.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "common/core/error.h"

namespace course::hpo {
namespace {

// The server lost: the statement's connection is gone (caught and retried, never shown as is).
struct ServerLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Type ids of pg_type (catalog/pg_type_d.h, a server header): the numbers read as numbers.
bool is_integer_type(Oid type) { return type == 20 || type == 21 || type == 23 || type == 26; }
bool is_real_type(Oid type) { return type == 700 || type == 701 || type == 1700; }

std::string first_line(const char* message) {
  std::string text = message ? message : "";
  return text.substr(0, text.find('\n'));
}

void refuse_password(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (!options) {
    const std::string message = first_line(error);
    PQfreemem(error);
    COURSE_FAIL("the study location ", url, " is not a PostgreSQL URL: ", message);
  }
  bool has_password = false;
  for (const PQconninfoOption* option = options; option->keyword; ++option) {
    has_password |= std::string(option->keyword) == "password" && option->val && *option->val;
  }
  PQconninfoFree(options);
  COURSE_CHECK(!has_password,
               "the study's PostgreSQL location carries a password: put it in ~/.pgpass or in "
               "the file PGPASSFILE names (a URL on the command line shows in `ps` and in the "
               "job's logs)");
}

// The statement with PostgreSQL's numbered parameters ($1, $2, ...) for `?` outside quotes.
std::string numbered_parameters(const std::string& sql) {
  std::string numbered;
  bool quoted = false;
  int count = 0;
  for (const char c : sql) {
    quoted ^= c == '\'';
    numbered += !quoted && c == '?' ? "$" + std::to_string(++count) : std::string(1, c);
  }
  return numbered;
}

std::optional<std::string> parameter_text(const SqlValue& value) {
  if (const auto* integer = std::get_if<int64_t>(&value)) return std::to_string(*integer);
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  const auto* real = std::get_if<double>(&value);
  if (!real || std::isnan(*real)) return std::nullopt;
  if (std::isinf(*real)) return *real > 0 ? "Infinity" : "-Infinity";
  char digits[32];
  std::snprintf(digits, sizeof digits, "%.17g", *real);
  return digits;
}

SqlValue column_value(const PGresult* result, int row, int column) {
  if (PQgetisnull(result, row, column)) return {};
  const char* text = PQgetvalue(result, row, column);
  const Oid type = PQftype(result, column);
  if (is_integer_type(type)) return static_cast<int64_t>(std::strtoll(text, nullptr, 10));
  if (is_real_type(type)) return std::strtod(text, nullptr);  // NaN and Infinity included
  return std::string(text);
}

}  // namespace

PostgresDatabase::PostgresDatabase(const std::string& url, double reconnect_seconds)
    : url_(url), reconnect_seconds_(reconnect_seconds) {
  refuse_password(url);
  // Before dbname, so the URL's own settings win.
  const char* keywords[] = {"connect_timeout", "application_name", "options", "dbname", nullptr};
  const char* values[] = {"10", "course-hpo", "-c client_min_messages=warning", url.c_str(),
                          nullptr};
  connection_ = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (PQstatus(connection_) != CONNECTION_OK) {
    const std::string message = first_line(PQerrorMessage(connection_));
    PQfinish(connection_);
    COURSE_FAIL("cannot connect to the study server ", url, ": ", message);
  }
}

PostgresDatabase::~PostgresDatabase() { PQfinish(connection_); }

SqlResult PostgresDatabase::run(const std::string& sql, const std::vector<SqlValue>& params) {
  if (in_transaction_) return run_once(sql, params);
  SqlResult result;
  retrying([&] { result = run_once(sql, params); });
  return result;
}

bool PostgresDatabase::has_table(const std::string& name) {
  return !run("SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() "
              "AND table_name = ?",
              {name})
              .rows.empty();
}

void PostgresDatabase::lock_row(const std::string& table, int64_t id) {
  run("SELECT id FROM " + table + " WHERE id = ? FOR UPDATE", {id});
}

void PostgresDatabase::run_transaction(const std::function<void()>& body) {
  if (in_transaction_) return body();
  retrying([&] {
    run_once("BEGIN", {});
    in_transaction_ = true;
    try {
      body();
      in_transaction_ = false;
      run_once("COMMIT", {});
    } catch (...) {
      in_transaction_ = false;
      if (PQstatus(connection_) == CONNECTION_OK) PQclear(PQexec(connection_, "ROLLBACK"));
      throw;
    }
  });
}

SqlResult PostgresDatabase::run_once(const std::string& sql, const std::vector<SqlValue>& params) {
  std::vector<std::optional<std::string>> texts;
  std::vector<const char*> pointers;
  for (const SqlValue& value : params) texts.push_back(parameter_text(value));
  for (const auto& text : texts) pointers.push_back(text ? text->c_str() : nullptr);
  const std::unique_ptr<PGresult, decltype(&PQclear)> result(
      PQexecParams(connection_, numbered_parameters(sql).c_str(), static_cast<int>(params.size()),
                   nullptr, pointers.data(), nullptr, nullptr, 0),
      PQclear);
  const ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    const std::string message =
        first_line(result ? PQresultErrorMessage(result.get()) : PQerrorMessage(connection_));
    if (PQstatus(connection_) != CONNECTION_OK) throw ServerLost(message);
    COURSE_FAIL("PostgreSQL at ", url_, ": ", message, " in ", sql);
  }
  SqlResult rows;
  if (std::string(PQcmdStatus(result.get())).rfind("SELECT", 0) != 0) {
    rows.changed = std::atoll(PQcmdTuples(result.get()));
  }
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    rows.rows.emplace_back();
    for (int column = 0; column < PQnfields(result.get()); ++column) {
      rows.rows.back().push_back(column_value(result.get(), row, column));
    }
  }
  return rows;
}

void PostgresDatabase::retrying(const std::function<void()>& attempt) {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  for (;;) {
    try {
      return attempt();
    } catch (const ServerLost& lost) {
      if (!deadline) {
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(reconnect_seconds_));
        std::fprintf(stderr, "lost the study server %s (%s): reconnecting for up to %.0f s\n",
                     url_.c_str(), lost.what(), reconnect_seconds_);
      }
      reconnect(lost.what(), *deadline);
    }
  }
}

void PostgresDatabase::reconnect(const std::string& why,
                                 std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    PQreset(connection_);
    if (PQstatus(connection_) == CONNECTION_OK) {
      std::fprintf(stderr, "reconnected to the study server %s\n", url_.c_str());
      return;
    }
    COURSE_CHECK(std::chrono::steady_clock::now() < deadline, "lost the study server ", url_, " (",
                 why, ") and could not reconnect for ", reconnect_seconds_,
                 " s: ", first_line(PQerrorMessage(connection_)));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace course::hpo
