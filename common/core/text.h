// Plain text as the course's tools read and write it: a text's lines, a word without the
// spaces around it, and text made safe inside an HTML page.
#pragma once

#include <string>
#include <vector>

namespace course {

std::vector<std::string> text_lines(const std::string& text);  // without their '\n'
std::string trimmed(const std::string& s);          // spaces, tabs and '\r' off both ends
std::string html_escaped(const std::string& text);  // & < > " as entities
// The items one after another, `separator` between two.
std::string joined(const std::vector<std::string>& items, const std::string& separator);
}  // namespace course
