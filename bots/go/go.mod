module tavernarena/bot

go 1.19
