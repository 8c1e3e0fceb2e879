// The vocabulary the measurements count and the rewrite moves between: word lists, English unless named.

export const words = (list: string) => new Set(list.trim().split(/\s+/));

export const STOPWORDS =
  words(`a about above after again against all almost also am an and any are as at be because been before being below
  between both but by can could did do does doing down during each either else even ever every few for from further get got had has have
  having he her here hers him his how i if in into is it its just least less let like made make many may me might more most much must my
  never no nor not now of off on once one only or other our ours out over own per quite rather really same shall she should since so some
  still such than that the their them then there these they this those though through thus to too under until up upon us very was we
  well were what when where whether which while who whom whose why will with within without would yet you your yours`);

export const LANGUAGE_STOPWORDS: Record<string, Set<string>> = {
  en: words(
    'the and of to a in is it that for you with on as are this be was have not but we they at by or from our your will can an which their has would there what all if',
  ),
  de: words(
    'der die das und ist nicht ein eine zu den von mit sich des auf für im dem auch es als wir sie ich werden wird sind oder bei nach aus einen einer noch wie über zum zur hat haben kann uns unsere ihre dass',
  ),
  fr: words(
    'le la les de des et est un une du en que qui dans pour pas sur au avec ce il elle nous vous sont par plus ne se ou mais aux cette leur été être',
  ),
  es: words(
    'el la los las de del y que en un una es por con para no se su al lo como más pero sus le ya o este esta son está muy también nuestro hay',
  ),
  it: words(
    'il lo la i gli le di del della e che è un una per non con sono da in al come più ma anche questo questa nel alla si ci noi siamo hanno essere',
  ),
  nl: words(
    'de het een en van is dat niet op te in voor met zijn er die ook als aan bij om maar wij we ze hij wordt worden kan naar dan nog heeft onze jullie u uw dit deze',
  ),
  pt: words(
    'o a os as de do da dos das e que em um uma para com não no na por se mais como mas ao é são ou seu sua nós você foi muito também está isso este esta',
  ),
};

export const FIRST_SINGULAR = words("i me my mine myself i'm i've i'd i'll");
export const FIRST_PLURAL = words("we us our ours ourselves we're we've we'd we'll let's");
export const SECOND_PERSON = words("you your yours yourself yourselves you're you've you'd you'll y'all");
/** "'s" is a contraction only after these words; elsewhere it is usually a possessive. */
export const S_CONTRACTIBLE = words('it that there here what who where how he she let');
/** Single-word hedges; the phrases below add hedges made of words that are not hedges alone. */
export const HEDGE_WORDS =
  words(`maybe perhaps might could may somewhat possibly arguably probably likely seemingly seem seems seemed appear appears
  apparently presumably potentially relatively fairly tentatively admittedly suggest suggests typically generally perchance`);
export const HEDGE_PHRASES =
  /\b(?:i|we) (?:think|believe|feel|guess|suppose)\b|\bsort of\b|\bkind of\b|\bto some extent\b|\bin some cases\b|\bmore or less\b|\bit is possible\b/gi;
export const CONFIDENT = words(
  'will must always never guarantee guaranteed certainly definitely clearly every exactly',
);
/** Base verbs that open an instruction. Small on purpose: nouns that look like verbs ("Change is…") are rare openers. */
export const IMPERATIVE_VERBS =
  words(`add use run set install open click check make take try call create configure ensure remember keep start stop read
  send choose pick grab come join visit see note avoid do don't never enable disable define pass return store write build deploy follow
  contact enter select replace remove delete update verify compare limit record skip authenticate subscribe pause swap trust hit taste
  brew grind pour stir enjoy give tell ask let's be book order sign find look get go bring share download upload copy paste`);
export const HUMOR_WORDS = words(
  'haha hahaha hehe lol lmao rofl jk kidding joke jokes joking pun puns punny oops whoops yikes voilà wink',
);
export const HUMOR_PHRASES =
  /\(yes,? really\)|\bplot twist\b|\bspoiler alert\b|\(we checked\)|\([A-Z][^()]{2,80}[.!?]\)/g;
export const HUMOR_EMOJI = /[😄😂🤣😆😜😉😅🙃😝😛🤪😁😹]/gu;
export const WARM_WORDS =
  words(`thank thanks thankful grateful gratitude glad happy love loved lovely care caring cares together welcome hope hopes
  sorry understand feel feels family families friend friends heart hearts kindness appreciate appreciated share warm warmly warmth dear
  community comfort safe`);
export const EXCITEMENT_WORDS = words(
  'amazing awesome incredible fantastic excited exciting thrilled wow absolutely totally super brilliant wonderful yay huge love',
);
export const FORMAL_MARKERS =
  words(`hereby herein thereof pursuant therefore thus furthermore moreover accordingly consequently hence shall whom whereas
  notwithstanding respectively regarding nevertheless henceforth aforementioned kindly esteemed undersigned obligations prudent sincere`);
export const SLANG = words(
  'hey gonna wanna gotta yeah yep yup nope cool awesome stuff kinda sorta okay ok guys folks tbh btw omg nah huh whoa legit vibe vibes chill dude ya quid',
);
export const TECHNICAL =
  words(`api apis endpoint endpoints request requests response server token tokens header headers parameter parameters
  configuration config json http https url cache database query schema function variable module dependency deploy deployment latency
  timeout retry retries authentication authorization payload webhook webhooks sdk cli integer string boolean array async asynchronously
  runtime environment instance cluster repository protocol interface idempotent pagination cursor cursors encryption certificate tls
  hash digest hexadecimal credential backoff algorithm`);
