package telegram

import (
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/policy"
)

// Telegram numbers people and chats alike with int64 ids; here a person
// becomes a policy.UserID, and a person written to becomes a chat again,
// each in one place.

// author is the person who wrote m.
func author(m *models.Message) policy.UserID { return policy.UserID(m.From.ID) }

// tapper is the person who tapped one of cq's buttons.
func tapper(cq *models.CallbackQuery) policy.UserID { return policy.UserID(cq.From.ID) }

// privateChat is the chat of a person's conversation with the bot: Telegram
// gives it the person's user id.
func privateChat(u policy.UserID) int64 { return int64(u) }
