// The storage tests' stores (see study_stores.h).
#include "common/hpo/tests/study_stores.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "common/core/error.h"
#include "common/hpo/postgres_database.h"

namespace course::hpo::testing_stores {
namespace {

// The script's command line: `command` on the test's server folder.
std::string server_command(const std::string& command) {
  return "tools/postgres/private_server.sh " + command + " " + ::testing::TempDir() + "/postgres";
}

void control(const std::string& command) {
  const std::string line = server_command(command);
  COURSE_CHECK(std::system(line.c_str()) == 0, "the private PostgreSQL server: ", line, " failed");
}

// The server, started on first use and removed when the test binary ends.
class PrivateServer {
 public:
  PrivateServer() {
    const std::string line = server_command("start") + " 127.0.0.1";
    FILE* output = popen(line.c_str(), "r");
    char url[512] = "";
    const bool read = output && std::fgets(url, sizeof url, output);
    COURSE_CHECK(output && pclose(output) == 0 && read, "cannot start a PostgreSQL server: ", line);
    base_url_ = std::string(url).substr(0, std::string(url).rfind('/') + 1);
    setenv("PGPASSFILE", (::testing::TempDir() + "/postgres/pgpass").c_str(), 1);
  }
  ~PrivateServer() {
    const std::string line = server_command("remove");
    if (std::system(line.c_str()) != 0) std::fprintf(stderr, "%s failed\n", line.c_str());
  }

  const std::string& base_url() const { return base_url_; }

 private:
  std::string base_url_;
};

PrivateServer& server() {
  static PrivateServer instance;
  return instance;
}

}  // namespace

const char* store_name(Store store) { return store == Store::kSqlite ? "Sqlite" : "Postgres"; }

std::string server_url(const std::string& name) { return server().base_url() + name; }

std::string fresh_location(Store store, const std::string& name) {
  if (store == Store::kSqlite) {
    const std::string path = ::testing::TempDir() + "/" + name + ".db";
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::remove((path + suffix).c_str());
    }
    return path;
  }
  PostgresDatabase admin(server_url("studies"), 10);
  admin.run("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  admin.run("CREATE DATABASE " + name);
  return server_url(name);
}

void kill_server() { control("kill"); }
void start_server() { control("start"); }

}  // namespace course::hpo::testing_stores
