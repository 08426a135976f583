// Messages for names the schema does not know, with a "did you mean" when a
// section, key or alias is close, shared by the TOML reader and the flags.
#pragma once

#include <string>
#include <string_view>

namespace flashtrain::config {

// "unknown section [optimzer]; did you mean [optimizer]?"
std::string unknown_section_message(std::string_view section);

// "unknown key 'lerning_rate' in [optimizer]; did you mean 'lr'?", or where
// the key lives if it is another section's, or the section's keys.
std::string unknown_key_message(std::string_view section, std::string_view key);

// For a key written before any section header:
// "key 'seq_len' is outside any section; 'seq_len' is a key of [data]".
std::string key_outside_sections_message(std::string_view key);

}  // namespace flashtrain::config
