%% @doc A tiny key-value cache.
-module(cache).
-behaviour(gen_server).

-export([start_link/0, get/1, put/2]).
-export([init/1, handle_call/3, handle_cast/2]).

-define(TIMEOUT, 5000).
-define(KEY(K), {cache, K}).

-record(state, {table = #{} :: map(), hits = 0 :: integer()}).

-type key() :: atom() | binary().

%% @doc Starts the cache server.
-spec start_link() -> {ok, pid()}.
start_link() ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, [], []).

%% @doc Looks a key up.
-spec get(key()) -> {ok, term()} | error.
get(Key) ->
    gen_server:call(?MODULE, {get, Key}, ?TIMEOUT).

put(Key, Value) ->
    gen_server:cast(?MODULE, {put, Key, Value}).

init([]) ->
    {ok, #state{}}.

%% Two clauses: a hit and a miss.
handle_call({get, Key}, _From, State = #state{table = T}) when is_map_key(Key, T) ->
    {reply, {ok, maps:get(Key, T)}, State#state{hits = State#state.hits + 1}};
handle_call({get, _Key}, _From, State) ->
    {reply, error, State}.

handle_cast({put, Key, Value}, State = #state{table = T}) ->
    {noreply, State#state{table = T#{Key => Value}}}.
