//===- Chat.cpp - Chat formats of the Kimi family -------------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/text/Chat.h"

#include "runtime/src/Status.h"

#include <algorithm>

namespace k3rt {

const char *const kKimiDefaultSystem = "You are Kimi, an AI assistant created by Moonshot AI.";

const char *const kKimiChatTemplate =
    "{%- if messages|length == 0 or messages[0]['role'] != 'system' -%}"
    "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI."
    "<|im_end|>{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}<|im_system|>"
    "{%- elif message['role'] == 'user' -%}<|im_user|>"
    "{%- else -%}<|im_assistant|>{%- endif -%}"
    "{{ message['role'] }}<|im_middle|>{{ message['content'] }}<|im_end|>"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}";

k3rt_status_t chatFormatOf(const Tokenizer &tok, ChatFormat &format) {
  const std::string &t = tok.chatTemplate();
  if (t.empty())
    return makeStatus(K3RT_INVALID_ARGUMENT, "tokenizer_config.json has no chat_template");
  // The Kimi markers, and the tokenizer must have them as special tokens.
  bool kimi = true;
  for (const char *m : {"<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|im_end|>"})
    kimi = kimi && t.find(m) != std::string::npos && tok.special(m);
  if (kimi) {
    format = ChatFormat();
    // The literal the template puts in a system turn it adds itself.
    const std::string open = "<|im_system|>system<|im_middle|>";
    for (size_t at = t.find(open); at != std::string::npos; at = t.find(open, at + 1)) {
      size_t from = at + open.size(), end = t.find("<|im_end|>", from);
      if (end != std::string::npos && end > from &&
          t.substr(from, end - from).find_first_of("{}") == std::string::npos) {
        format.defaultSystem = t.substr(from, end - from);
        break;
      }
    }
    return nullptr;
  }
  std::string head = printable(t, 60);
  return makeStatus(K3RT_UNIMPLEMENTED,
                    "unrecognised chat_template (it begins '" + head +
                        "'): k3 knows the Kimi format (<|im_user|>, <|im_assistant|>, "
                        "<|im_middle|>, <|im_end|> as special tokens)");
}

k3rt_status_t renderChat(const ChatFormat &format, const std::vector<ChatMessage> &messages,
                         bool addGenerationPrompt, std::string &text) {
  text.clear();
  if ((messages.empty() || messages[0].role != "system") && !format.defaultSystem.empty())
    text += "<|im_system|>system<|im_middle|>" + format.defaultSystem + "<|im_end|>";
  for (const ChatMessage &m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant")
      return makeStatus(K3RT_INVALID_ARGUMENT, "unsupported message role '" + printable(m.role) +
                                                   "' (system, user or assistant)");
    text += "<|im_" + m.role + "|>" + m.role + "<|im_middle|>" + m.content + "<|im_end|>";
  }
  if (addGenerationPrompt)
    text += "<|im_assistant|>assistant<|im_middle|>";
  return nullptr;
}

std::vector<int32_t> chatStopIds(const Tokenizer &tok) {
  std::vector<int32_t> ids;
  if (auto e = tok.special("<|im_end|>"))
    ids.push_back(*e);
  if (auto e = tok.special(tok.eosToken()); e && std::find(ids.begin(), ids.end(), *e) == ids.end())
    ids.push_back(*e);
  return ids;
}

} // namespace k3rt
