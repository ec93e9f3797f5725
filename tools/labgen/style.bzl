"""The clang-format style of the repository (.clang-format), for formatting generated files."""

CLANG_FORMAT_STYLE = "{BasedOnStyle: Google, ColumnLimit: 100}"
