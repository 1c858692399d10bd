// A starter bot for Dwarven Tavern Arena that plays both games, in one file, standard library only.
//
//	go build -o bot . && ./bot -game thud [-side troll] [-simulation ID] [-host H] [-port N] [-nick NAME]
//
//	TAVERN_BOT_KEY=... ./bot -game thud -seek [-bot NAME] [-host H] [-port N]
//
// The arena and the bot exchange JSON objects, one per line (docs/protocol.md). Without
// -simulation the bot joins a random waiting simulation of its game, or creates one and waits.
// With -seek it is a registered bot (`tavern bots add NAME`, docs/ladder.md): it names itself
// with -bot NAME (or TAVERN_BOT_NAME) and the key from TAVERN_BOT_KEY, never from the command
// line (where `ps` would show it) and never printed, seeks a rated game of its game on the
// ladder, and plays the game it is paired into as a joined one (sides alternate: no -side).
// The join or seek asks to be pinged ("pings": true): the bot answers each {"type":"ping","id":N}
// with {"type":"pong","id":N} as soon as it reads it, so that the arena can tell the network's
// share of a reply's time from the bot's thinking.
//
// Tavern: a team scores when the rival's barrel reaches the team's home row (team1's is the
// bottom row, so team1 pushes south; team2 pushes north). Attackers get behind the rival's barrel
// and push it; defenders push their own barrel the same way, away from the rival's row.
// Thud: every turn lists every legal move with what it kills. Take the move that kills most;
// otherwise dwarfs keep together, out of the trolls' reach, and trolls close in on the dwarfs.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"time"
)

// Message is any message from the arena; each type fills in the fields it has.
type Message struct {
	Type         string          `json:"type"`
	Message      string          `json:"message"` // error
	Reason       string          `json:"reason"`  // error
	SimulationID string          `json:"simulationId"`
	Team         string          `json:"team"` // Tavern game-info and score
	Side         string          `json:"side"` // Thud game-info
	Width        int             `json:"width"`
	Height       int             `json:"height"`
	State        json.RawMessage `json:"state"`
	Turn         int             `json:"turn"` // turn: its number; the reply names it
	Result       json.RawMessage `json:"result"`
	ID           json.RawMessage `json:"id"` // ping: sent back as it came, an integer
}

func main() {
	host := flag.String("host", "127.0.0.1", "arena host")
	port := flag.Int("port", 9000, "arena port")
	game := flag.String("game", "tavern", "tavern or thud")
	simulation := flag.String("simulation", "", "simulation id (default: a random waiting one)")
	side := flag.String("side", "", "Thud: dwarf or troll (default: the first free side)")
	nick := flag.String("nick", "Go bot", "player name")
	seek := flag.Bool("seek", false, "seek a rated game as a registered bot (its key in TAVERN_BOT_KEY)")
	bot := flag.String("bot", os.Getenv("TAVERN_BOT_NAME"), "-seek: the registered bot's name")
	flag.Parse()
	if *game != "tavern" && *game != "thud" {
		fmt.Fprintln(os.Stderr, "-game must be tavern or thud")
		os.Exit(2)
	}
	key := os.Getenv("TAVERN_BOT_KEY")
	if *seek && (*bot == "" || key == "") {
		fmt.Fprintln(os.Stderr, "-seek needs -bot NAME (or TAVERN_BOT_NAME) and the key in TAVERN_BOT_KEY")
		os.Exit(2)
	}
	join := map[string]any{"type": "join-simulation", "game": *game, "nick": *nick}
	if *seek {
		join = map[string]any{"type": "seek", "game": *game, "bot": *bot, "key": key, "rated": true}
	} else if *simulation != "" {
		join["simulationId"] = *simulation
	}
	if *game == "tavern" {
		join["names"] = []string{"Gimli", "Durin", "Thorin", "Balin", "Dwalin"}
	}
	if *side != "" && !*seek {
		join["side"] = *side
	}
	join["pings"] = true // the arena times the network by them, not to charge it as thinking
	// Too many key checks from this address wait at the arena: connect again and send the join
	// or seek again, after 1 s, then 2, 4... up to 30 s (a wrong key, or any other error, ends
	// the bot).
	delay := time.Second
	for {
		code := play(net.JoinHostPort(*host, strconv.Itoa(*port)), *game, join)
		if code != paced {
			os.Exit(code)
		}
		fmt.Fprintf(os.Stderr, "trying again in %d s\n", delay/time.Second)
		time.Sleep(delay)
		if delay *= 2; delay > 30*time.Second {
			delay = 30 * time.Second
		}
	}
}

// paced is what play returns when the arena asked to try again later (not an exit code).
const paced = -1

// play plays one game on a new connection: the process's exit code, or paced.
func play(address, game string, join map[string]any) int {
	conn, err := net.Dial("tcp", address)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot connect:", err)
		return 1
	}
	defer conn.Close()
	send := func(message map[string]any) bool {
		line, _ := json.Marshal(message)
		if _, err := conn.Write(append(line, '\n')); err != nil {
			fmt.Fprintln(os.Stderr, "cannot send:", err)
			return false
		}
		return true
	}
	if !send(join) {
		return 1
	}

	var info Message // our game-info: team (Tavern) or side (Thud), and the board's size
	reader := bufio.NewReader(conn)
	for {
		line, err := reader.ReadBytes('\n')
		if err != nil {
			fmt.Fprintln(os.Stderr, "connection closed before the game ended")
			return 1
		}
		if len(line) <= 1 {
			continue
		}
		var message Message
		if err := json.Unmarshal(line, &message); err != nil {
			fmt.Fprintln(os.Stderr, "bad message from the arena:", err)
			continue
		}
		switch message.Type {
		case "ping": // answered at once, never after thinking (conn.Write is unbuffered)
			if !send(map[string]any{"type": "pong", "id": message.ID}) {
				return 1
			}
		case "game-info":
			info = message
			fmt.Printf("joined %s as %s%s\n", message.SimulationID, message.Team, message.Side)
		case "turn":
			if reply, err := answer(game, message.State, info); err == nil {
				// Name the turn answered: a reply that arrives too late is then refused
				// ("Stale turn") instead of being played as a later turn.
				reply["turn"] = message.Turn
				if !send(reply) {
					return 1
				}
			} else {
				fmt.Fprintln(os.Stderr, "bad turn:", err)
			}
		case "score":
			fmt.Println("point for", message.Team)
		case "win-game", "loss-game", "draw-game":
			fmt.Println(message.Type, string(message.Result))
			return 0
		case "error":
			fmt.Fprintf(os.Stderr, "server error: %s (%s)\n", message.Message, message.Reason)
			if info.Type == "" { // the join or seek failed: there is no game to wait for
				if message.Message == "Too many key checks" {
					return paced
				}
				return 1
			}
		}
	}
}

// answer is the reply to a turn, whose state is given.
func answer(game string, raw json.RawMessage, info Message) (map[string]any, error) {
	if game == "tavern" {
		var state TavernState
		if err := json.Unmarshal(raw, &state); err != nil {
			return nil, err
		}
		actions := tavernActions(state, info.Team, info.Width, info.Height)
		return map[string]any{"type": "player-turn", "actions": actions}, nil
	}
	var state ThudState
	if err := json.Unmarshal(raw, &state); err != nil {
		return nil, err
	}
	return thudReply(state), nil
}

// --- Dwarven Tavern ---------------------------------------------------------------------------

type Cell struct {
	X int `json:"x"`
	Y int `json:"y"`
}

type Dwarf struct {
	ID     int  `json:"id"`
	Coords Cell `json:"coords"`
}

type TavernState struct {
	Barrels map[string]struct {
		Coords Cell `json:"coords"`
	} `json:"barrels"`
	Team1 []Dwarf `json:"team1"`
	Team2 []Dwarf `json:"team2"`
}

var directions = []string{"NORTH", "EAST", "SOUTH", "WEST"}
var steps = map[string]Cell{"NORTH": {0, -1}, "EAST": {1, 0}, "SOUTH": {0, 1}, "WEST": {-1, 0}}

// tavernActions gives each dwarf one order. The 1st, 3rd and 5th dwarves attack: the nearest
// gets behind the rival's barrel and pushes, the others stand beside it. The 2nd and 4th defend:
// they push our barrel toward our own row, and once it cannot go further, stand where the rival
// would have to stand to push it back.
func tavernActions(state TavernState, team string, width, height int) []map[string]any {
	rival, push, lastRow := "team2", "SOUTH", height-2
	dwarves := state.Team1
	if team == "team2" {
		rival, push, lastRow, dwarves = "team1", "NORTH", 1, state.Team2
	}
	d := steps[push]
	own, other := state.Barrels[team].Coords, state.Barrels[rival].Coords
	walls := map[Cell]bool{own: true, other: true} // paths go around barrels
	ownSafe := own.Y == lastRow
	defend := Cell{own.X - d.X, own.Y - d.Y}
	if ownSafe {
		defend = Cell{own.X + d.X, own.Y + d.Y}
	}
	goals := map[int]Cell{}
	pushes := map[int]bool{}
	for role, goal := range []Cell{{other.X - d.X, other.Y - d.Y}, defend} {
		var group []Dwarf
		for i, dwarf := range dwarves {
			if i%2 == role {
				group = append(group, dwarf)
			}
		}
		sort.SliceStable(group, func(a, b int) bool {
			return distance(group[a].Coords, goal) < distance(group[b].Coords, goal)
		})
		for rank, dwarf := range group {
			if rank == 0 {
				goals[dwarf.ID], pushes[dwarf.ID] = goal, role == 0 || !ownSafe
				continue
			}
			offset := 1 + rank/2
			if rank%2 == 1 {
				offset = -offset
			}
			goals[dwarf.ID] = Cell{clamp(goal.X+offset, 0, width-1), goal.Y}
		}
	}
	var pushing, others []map[string]any
	for _, dwarf := range dwarves {
		goal := goals[dwarf.ID]
		if dwarf.Coords == goal && pushes[dwarf.ID] {
			pushing = append(pushing, map[string]any{"botId": dwarf.ID, "type": "MOVE", "direction": push})
		} else if step := firstStep(dwarf.Coords, goal, walls, width, height); step != "" {
			others = append(others, map[string]any{"botId": dwarf.ID, "type": "MOVE", "direction": step})
		} else {
			others = append(others, map[string]any{"botId": dwarf.ID, "type": "PASS"})
		}
	}
	// Pushers act first, before a teammate can walk into their square.
	return append(pushing, others...)
}

// firstStep is the first move of a shortest path from start to goal around the walls, or "".
func firstStep(start, goal Cell, walls map[Cell]bool, width, height int) string {
	first := map[Cell]string{start: ""}
	queue := []Cell{start}
	for len(queue) > 0 {
		cell := queue[0]
		queue = queue[1:]
		if cell == goal {
			return first[cell]
		}
		for _, name := range directions {
			next := Cell{cell.X + steps[name].X, cell.Y + steps[name].Y}
			_, seen := first[next]
			if seen || walls[next] || next.X < 0 || next.Y < 0 || next.X >= width || next.Y >= height {
				continue
			}
			first[next] = first[cell]
			if first[next] == "" {
				first[next] = name
			}
			queue = append(queue, next)
		}
	}
	return ""
}

func distance(a, b Cell) int { return abs(a.X-b.X) + abs(a.Y-b.Y) }

// --- Thud -------------------------------------------------------------------------------------

type Square [2]int // [x, y]

type ThudMove struct {
	From  Square `json:"from"`
	To    Square `json:"to"`
	Kind  string `json:"kind"`
	Kills int    `json:"kills"`
}

type ThudState struct {
	Side     string          `json:"side"` // the side on move: us
	Dwarfs   []Square        `json:"dwarfs"`
	Trolls   []Square        `json:"trolls"`
	Score    map[string]int  `json:"score"`
	Declared map[string]bool `json:"declared"`
	Moves    []ThudMove      `json:"moves"`
}

// thudReply picks the move with the best value; kills count most.
func thudReply(state ThudState) map[string]any {
	if len(state.Moves) == 0 {
		return map[string]any{"type": "player-turn", "stop": true} // the arena ends such games itself
	}
	occupied := map[Square]bool{}
	for _, piece := range append(append([]Square{}, state.Dwarfs...), state.Trolls...) {
		occupied[piece] = true
	}
	// Where the opponent's lines reach next ply: trolls kill next to where they land, dwarfs
	// are hurled onto trolls.
	reach := lineReach(state.Trolls, occupied)
	if state.Side == "troll" {
		reach = lineReach(state.Dwarfs, occupied)
	}
	best, bestValue := state.Moves[0], -1<<30
	for _, move := range state.Moves {
		if value := thudValue(state, move, reach); value > bestValue {
			best, bestValue = move, value
		}
	}
	reply := map[string]any{"type": "player-turn", "move": map[string]any{"from": best.From, "to": best.To}}
	// Accept peace when the opponent offers it and we are not behind.
	ours, theirs, opponent := state.Score["dwarfs"], state.Score["trolls"], "troll"
	if state.Side == "troll" {
		ours, theirs, opponent = theirs, ours, "dwarf"
	}
	if state.Declared[opponent] {
		reply["declare"] = ours >= theirs
	}
	return reply
}

func thudValue(state ThudState, move ThudMove, reach map[Square]bool) int {
	value := 1000 * move.Kills
	if state.Side == "troll" {
		if reach[move.To] {
			value -= 100 // a dwarf could be hurled onto it
		}
		return value - nearest(move.To, state.Dwarfs) // close in
	}
	unsafe := false
	for _, square := range neighbours(move.To) {
		unsafe = unsafe || reach[square]
	}
	if unsafe && move.Kills == 0 {
		value -= 100 // a troll could land next to it and kill it
	}
	friends := 0 // dwarfs next to the square form the lines that hurl
	for _, dwarf := range state.Dwarfs {
		if dwarf != move.From && chebyshev(dwarf, move.To) == 1 {
			friends++
		}
	}
	return value + 3*friends - 2*abs(nearest(move.To, state.Trolls)-3) // just out of reach
}

// lineReach is every empty square the pieces reach in one line move: the front piece of a line
// of n pieces moves up to n squares along it (a troll's walk or shove, a dwarf's hurl).
func lineReach(pieces []Square, occupied map[Square]bool) map[Square]bool {
	mine := map[Square]bool{}
	for _, piece := range pieces {
		mine[piece] = true
	}
	reach := map[Square]bool{}
	for _, piece := range pieces {
		for _, d := range neighbours(Square{0, 0}) {
			line := 0
			for at := piece; mine[at]; at = (Square{at[0] - d[0], at[1] - d[1]}) {
				line++
			}
			for step := 1; step <= line; step++ {
				at := Square{piece[0] + step*d[0], piece[1] + step*d[1]}
				if occupied[at] || !onBoard(at) {
					break
				}
				reach[at] = true
			}
		}
	}
	return reach
}

// onBoard: the 15x15 square with its corners cut, less the Thudstone in the middle.
func onBoard(s Square) bool {
	x, y := s[0], s[1]
	return x >= 0 && y >= 0 && x < 15 && y < 15 && x+y >= 5 && 14-x+y >= 5 && x+14-y >= 5 &&
		28-x-y >= 5 && s != Square{7, 7}
}

func neighbours(s Square) []Square {
	var around []Square
	for dx := -1; dx <= 1; dx++ {
		for dy := -1; dy <= 1; dy++ {
			if dx != 0 || dy != 0 {
				around = append(around, Square{s[0] + dx, s[1] + dy})
			}
		}
	}
	return around
}

// nearest is the distance from a square to the nearest of pieces.
func nearest(square Square, pieces []Square) int {
	best := 99
	for _, piece := range pieces {
		if d := chebyshev(square, piece); d < best {
			best = d
		}
	}
	return best
}

func chebyshev(a, b Square) int {
	dx, dy := abs(a[0]-b[0]), abs(a[1]-b[1])
	if dx > dy {
		return dx
	}
	return dy
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func clamp(n, low, high int) int {
	if n < low {
		return low
	}
	if n > high {
		return high
	}
	return n
}
