//===- Chat.h - Chat formats of the Kimi family -----------------*- C++ -*-===//
//
// Part of k3. The checkpoint's Jinja `chat_template` is the authority, and
// there is no Jinja engine in Debian's C++ world, so, as llama.cpp does,
// known templates are recognised and rendered by hand. Known: the Kimi
// format (Kimi K2, Kimi Linear; K3 ships the same tokenizer and markers):
//
//   <|im_system|>system<|im_middle|>{the template's default}<|im_end|>
//   <|im_{role}|>{role}<|im_middle|>{content}<|im_end|>           (each)
//   <|im_assistant|>assistant<|im_middle|>                       (prompt)
//
// See ../../../../shared/spec/SERVING.md.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_TEXT_CHAT_H
#define RUNTIME_SRC_TEXT_CHAT_H

#include "runtime/src/text/Tokenizer.h"

#include <string>
#include <vector>

namespace k3rt {

struct ChatMessage {
  std::string role; ///< system, user or assistant
  std::string content;
};

/// A recognised chat template: its kind, and the system prompt it adds when
/// the messages have none (read from the template's own text).
struct ChatFormat {
  enum Kind { Kimi } kind = Kimi;
  std::string defaultSystem; ///< empty: the template adds none
};

/// The system prompt the Kimi template adds when the messages have none.
extern const char *const kKimiDefaultSystem;
/// A Kimi-format Jinja template (the synthetic tokenizers carry it).
extern const char *const kKimiChatTemplate;

/// The format of `tokenizer`'s chat_template (tokenizer_config.json's, else
/// chat_template.jinja beside it), or an error naming what was found.
k3rt_status_t chatFormatOf(const Tokenizer &tokenizer, ChatFormat &format);

/// The prompt text for `messages` (special-token strings in it are meant to
/// be encoded as specials). An unknown role is an error.
k3rt_status_t renderChat(const ChatFormat &format, const std::vector<ChatMessage> &messages,
                         bool addGenerationPrompt, std::string &text);

/// The ids that end an assistant turn: <|im_end|> and the eos token.
std::vector<int32_t> chatStopIds(const Tokenizer &tokenizer);

} // namespace k3rt

#endif // RUNTIME_SRC_TEXT_CHAT_H
